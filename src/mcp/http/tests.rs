//! The unit tests of `mcp::http`.

use super::*;

#[test]
fn a_loopback_bind_accepts_the_three_local_names_with_its_port() {
    let (hosts, origins) = allowed_authorities(&"127.0.0.1:8080".parse().unwrap(), &[]);
    assert_eq!(hosts, ["localhost:8080", "127.0.0.1:8080", "[::1]:8080"]);
    assert_eq!(origins, ["http://localhost:8080", "http://127.0.0.1:8080", "http://[::1]:8080"]);
}

#[test]
fn another_bind_accepts_its_address_and_the_extra_names() {
    let (hosts, origins) = allowed_authorities(&"10.1.2.3:9000".parse().unwrap(), &["tools.example".into()]);
    assert_eq!(hosts, ["10.1.2.3:9000", "tools.example"]);
    assert_eq!(origins, ["http://10.1.2.3:9000", "http://tools.example:*", "https://tools.example:*"]);
}

#[test]
fn only_loopback_binds_go_without_a_token() {
    assert!(check_bind(&"127.0.0.1:1".parse().unwrap(), false).is_ok());
    assert!(check_bind(&"[::1]:1".parse().unwrap(), false).is_ok());
    assert!(check_bind(&"0.0.0.0:1".parse().unwrap(), false).is_err());
    assert!(check_bind(&"0.0.0.0:1".parse().unwrap(), true).is_ok());
}

#[test]
fn at_the_cap_the_connection_idle_longest_is_closed_and_busy_ones_are_kept() {
    let conns = Conns::default();
    let (a, ca) = conns.admit(2, CancellationToken::new()).expect("room");
    std::thread::sleep(Duration::from_millis(5));
    let (_, cb) = conns.admit(2, CancellationToken::new()).expect("room");
    // `a` is the oldest idle one: the third connection closes it.
    let (_, cc) = conns.admit(2, CancellationToken::new()).expect("room made");
    assert!(ca.close.is_cancelled() && !cb.close.is_cancelled());
    assert_eq!(conns.len(), 2);
    conns.remove(a); // its task ends: nothing to forget twice
                     // Both open ones busy: no room, nothing closed.
    let (_busy_b, _busy_c) = (Busy::new(&cb), Busy::new(&cc));
    assert!(conns.admit(2, CancellationToken::new()).is_none());
    assert!(!cb.close.is_cancelled() && !cc.close.is_cancelled());
    // Idle since before now: closed by the sweep, unless busy.
    drop(_busy_b);
    conns.close_idle_since(Instant::now());
    assert!(cb.close.is_cancelled() && !cc.close.is_cancelled());
    assert_eq!(conns.len(), 1);
}

/// A connection whose writes have not gone on since before the sweep's time is closed,
/// busy or not; one whose writes went on again is kept.
#[test]
fn a_connection_whose_writes_stalled_is_closed_busy_or_not() {
    let conns = Conns::default();
    let (_, stalled) = conns.admit(4, CancellationToken::new()).expect("room");
    let (_, going) = conns.admit(4, CancellationToken::new()).expect("room");
    let (_busy_a, _busy_b) = (Busy::new(&stalled), Busy::new(&going));
    let before = Instant::now();
    *stalled.stalled_since.lock().expect("lock") = Some(before);
    *going.stalled_since.lock().expect("lock") = Some(before + Duration::from_secs(1));
    conns.close_idle_since(before);
    assert!(stalled.close.is_cancelled() && !going.close.is_cancelled());
    assert_eq!(conns.len(), 1);
}

/// The frames of `body` to its end, or the error that ended it.
async fn frames(body: &mut Answered) -> (Vec<Bytes>, Option<super::super::spliced::Cut>) {
    let mut frames = Vec::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => frames.extend(frame.into_data().ok()),
            Err(cut) => return (frames, Some(cut)),
        }
    }
    (frames, None)
}

/// An event holding a large answer's marks, and a JSON answer holding them, go out in
/// slices (many frames, the length not told), their bytes those of the message spliced
/// whole; a text forgotten while its message is being written ends the body with the
/// error that closes the connection.
#[test]
fn a_message_holding_marks_goes_out_in_slices_as_spliced_whole() {
    use super::super::spliced::{answer, forget, splice, Cut, SLICE};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let conns = Conns::default();
    let (_, conn) = conns.admit(4, CancellationToken::new()).expect("room");
    let text = format!("{{\"v\":[{}1]}}", "1,".repeat(3 * SLICE));
    let message = |id: u64| {
        let marked = answer(text.clone(), true, false);
        (serde_json::json!({"jsonrpc": "2.0", "id": id, "result": marked}), marked)
    };
    runtime.block_on(async {
        // An event of a stream.
        let (event, _) = message(1);
        let whole = splice(format!("data: {event}\n\n").into_bytes());
        let (event, _) = message(1);
        let mut response = Response::new(Full::new(Bytes::from(format!("data: {event}\n\n"))).boxed());
        response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
        let (response, sliced) = sliced_json(response).await;
        assert!(sliced.is_none());
        let mut body = answered(response, Busy::new(&conn)).into_body();
        let (sent, cut) = frames(&mut body).await;
        assert!(cut.is_none() && sent.len() >= 6, "{} frames", sent.len());
        assert_eq!(sent.concat(), whole);
        // A JSON answer.
        let (json, _) = message(2);
        let whole = splice(json.to_string().into_bytes());
        let (json, _) = message(2);
        let (response, sliced) = sliced_json(json_response(StatusCode::OK, &json)).await;
        let mut body = answered(response, Busy::new(&conn)).into_body();
        body.sliced = sliced;
        assert!(body.sliced.is_some() && !hyper::body::Body::is_end_stream(&body));
        assert_eq!(hyper::body::Body::size_hint(&body).exact(), None);
        let (sent, cut) = frames(&mut body).await;
        assert!(cut.is_none() && sent.len() >= 6, "{} frames", sent.len());
        assert_eq!(sent.concat(), whole);
        // Its text forgotten after the first slice: the body ends with the cut.
        let (event, marked) = message(3);
        let response = Response::new(Full::new(Bytes::from(format!("data: {event}\n\n"))).boxed());
        let mut body = answered(response, Busy::new(&conn)).into_body();
        let first = body.frame().await.expect("a frame").expect("a slice");
        assert!(first.data_ref().is_some_and(|d| d.len() >= SLICE));
        forget(&marked);
        let (rest, cut) = frames(&mut body).await;
        assert!(rest.is_empty());
        assert_eq!(cut, Some(Cut));
    });
}

#[test]
fn the_default_connection_cap_is_below_the_descriptor_limit() {
    let cap = default_max_connections() as u64;
    assert!(cap >= 1 && cap <= DEFAULT_MAX_CONNECTIONS as u64);
    if let Some(limit) = descriptor_limit() {
        assert!(cap <= limit / 2, "{cap} of {limit}");
    }
    assert_eq!(HttpOptions::default().read_timeout, Duration::from_secs(30));
    assert_eq!(sweep_period(Duration::from_secs(30)), Duration::from_secs(1));
    assert_eq!(sweep_period(Duration::from_secs(1)), Duration::from_millis(100));
}

#[test]
fn the_bearer_scheme_is_case_insensitive_and_the_token_trimmed() {
    assert_eq!(strip_bearer(b"Bearer abc"), Some(&b"abc"[..]));
    assert_eq!(strip_bearer(b"bearer  abc "), Some(&b"abc"[..]));
    assert_eq!(strip_bearer(b"Basic abc"), None);
    assert_eq!(strip_bearer(b"Bearer "), None);
    assert_eq!(strip_bearer(b"Bear"), None);
}
