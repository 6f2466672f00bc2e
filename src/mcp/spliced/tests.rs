//! The unit tests of `mcp::spliced`.

use super::*;

fn big(n: usize) -> String {
    format!("{{\"v\":[{}1]}}", "1,".repeat(n))
}

#[test]
fn a_long_answer_goes_out_as_if_it_had_been_built() {
    let text = big(SPLICED_FROM);
    let marked = answer(text.clone(), true, false);
    assert!(marked.to_string().len() < 400, "{marked}");
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": marked});
    let sent = splice(message.to_string().into_bytes());
    let read: Json = serde_json::from_slice(&sent).expect("JSON");
    let value = parse(&text);
    assert_eq!(read["result"]["structuredContent"], value);
    assert_eq!(read["result"]["content"][0]["text"], Json::String(text));
    // Taken: a second write of the same marks says the answer is gone, as JSON.
    let again: Json = serde_json::from_slice(&splice(message.to_string().into_bytes())).expect("JSON");
    assert_eq!(again["result"]["structuredContent"], Json::Null);
    assert_eq!(again["result"]["content"][0]["text"], GONE);
}

#[test]
fn a_short_answer_is_built_and_marks_not_ours_are_left() {
    let small = answer("{\"a\":1}".into(), true, true);
    assert_eq!(
        small,
        json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "isError": true, "structuredContent": {"a": 1}})
    );
    // A client's string that looks like a mark but has another key, or no form.
    let other = b"{\"a\":\"tdsl-splice-00000000000000000000000000000000-1-v\",\"b\":\"tdsl-splice-\"}".to_vec();
    assert_eq!(splice(other.clone()), other);
    let mut ours = format!("[\"{}", registry().prefix).into_bytes();
    ours.extend_from_slice(b"x-v\"]");
    assert_eq!(splice(ours.clone()), ours);
}

#[test]
fn an_answer_not_sent_is_forgotten() {
    let marked = answer(big(SPLICED_FROM), true, false);
    let mark = marked["structuredContent"].as_str().expect("a mark").to_string();
    let n = read_mark(format!("{}\"", &mark[registry().prefix.len()..]).as_bytes()).expect("ours").0;
    let held = |n| registry().lock().held.contains_key(&n);
    assert!(held(n));
    forget(&marked);
    assert!(!held(n));
    // Its marks, written after all, say the answer is gone.
    let sent: Json = serde_json::from_slice(&splice(marked.to_string().into_bytes())).expect("JSON");
    assert_eq!(sent["structuredContent"], Json::Null);
}

/// Texts held past the bound make room by forgetting the oldest first, as many as needed
/// and no more; the bytes held are counted as texts come and go.
#[test]
fn the_texts_held_stay_within_the_bound_the_oldest_forgotten_first() {
    let mut texts = Texts::default();
    let t0 = Instant::now();
    let kib = |k: usize| "x".repeat(k << 10);
    let a = texts.hold(kib(100), t0, 300 << 10).expect("held");
    let b = texts.hold(kib(100), t0, 300 << 10).expect("held");
    let c = texts.hold(kib(100), t0, 300 << 10).expect("held");
    assert_eq!(texts.bytes, 300 << 10);
    // 150 KiB more: the oldest two go (one would leave 350 KiB), the third stays.
    let d = texts.hold(kib(150), t0, 300 << 10).expect("held");
    assert_eq!(texts.held.keys().copied().collect::<Vec<_>>(), [c, d]);
    assert_eq!(texts.bytes, 250 << 10);
    assert_eq!(texts.forgotten, (2, 200 << 10));
    assert!(a < b && b < c);
    // A text written is let go: its bytes are given back.
    texts.remove(c);
    assert_eq!(texts.bytes, 150 << 10);
    // Alone larger than the bound: not held, and nothing is forgotten for it.
    assert_eq!(texts.hold(kib(301), t0, 300 << 10), Err(TooLarge { len: 301 << 10, max: 300 << 10 }));
    assert_eq!(texts.held.keys().copied().collect::<Vec<_>>(), [d]);
    // Past KEPT_FOR a text is forgotten at the next one's making, room needed or not, and
    // not counted as forgotten to make room.
    texts.hold(kib(1), t0 + KEPT_FOR, 300 << 10).expect("held");
    assert_eq!(texts.held.len(), 1);
    assert_eq!(texts.bytes, 1 << 10);
    assert_eq!(texts.forgotten, (2, 200 << 10));
}

/// A text forgotten between a message's two marks (room made for another answer as the
/// message goes out) is written at both: the first took it out. Before, the text block
/// went out whole and `structuredContent` as `null`.
#[test]
fn a_text_forgotten_between_a_messages_two_marks_is_written_at_both() {
    let text = big(SPLICED_FROM);
    let marked = answer(text.clone(), true, false);
    let n = numbers(&marked)[0];
    let mut taken = HashMap::new();
    let (mut first, mut second) = (Vec::new(), Vec::new());
    write_mark(&mut first, n, Form::Text, &mut taken);
    forget(&marked);
    write_mark(&mut second, n, Form::Value, &mut taken);
    assert_eq!(serde_json::from_slice::<Json>(&first).expect("JSON"), Json::String(text.clone()));
    assert_eq!(second, text.into_bytes());
}

/// Texts whose response is gone go first when room is needed, and are let go
/// ORPHAN_KEPT_FOR after they were orphaned, while older texts stay.
#[test]
fn orphaned_texts_are_forgotten_first_and_sooner() {
    let mut texts = Texts::default();
    let t0 = Instant::now();
    let kib = |k: usize| "x".repeat(k << 10);
    let max = 300 << 10;
    let a = texts.hold(kib(100), t0, max).expect("held");
    let b = texts.hold(kib(100), t0, max).expect("held");
    let c = texts.hold(kib(100), t0, max).expect("held");
    texts.orphan(&[b], t0);
    let d = texts.hold(kib(100), t0, max).expect("held");
    assert_eq!(texts.held.keys().copied().collect::<Vec<_>>(), [a, c, d]);
    texts.orphan(&[c], t0);
    let e = texts.hold(kib(1), t0 + ORPHAN_KEPT_FOR, 1 << 30).expect("held");
    assert_eq!(texts.held.keys().copied().collect::<Vec<_>>(), [a, d, e]);
    assert_eq!(texts.bytes, (200 << 10) + (1 << 10));
}

/// A response found gone orphans the texts tied to it, whether they were tied before or
/// after; an answer written whole is not touched by its response's end.
#[test]
fn a_response_gone_orphans_the_texts_tied_to_it() {
    let orphaned = |m: &Json| {
        let n = numbers(m)[0];
        registry().lock().held.get(&n).map(|t| t.orphaned.is_some())
    };
    let stream = Stream::default();
    let first = answer(big(SPLICED_FROM), true, false);
    stream.tie(&first);
    assert_eq!(orphaned(&first), Some(false));
    stream.gone();
    assert_eq!(orphaned(&first), Some(true));
    let second = answer(big(SPLICED_FROM), true, false);
    stream.tie(&second);
    assert_eq!(orphaned(&second), Some(true));
    forget(&first);
    forget(&second);
    let written = Stream::default();
    let third = answer(big(SPLICED_FROM), false, false);
    written.tie(&third);
    let sent = splice(json!({"result": third}).to_string().into_bytes());
    assert!(sent.len() > SPLICED_FROM);
    assert_eq!(orphaned(&third), None);
    written.gone();
    assert!(written.lock().texts.is_empty());
}

/// The operator is told of the texts forgotten to make room, at most once a minute,
/// with what was forgotten since.
#[test]
fn forgetting_to_make_room_is_told_at_most_once_a_minute() {
    let mut texts = Texts::default();
    let t0 = Instant::now();
    assert_eq!(texts.warning(t0, 10), None);
    texts.forgotten = (3, 30);
    let told = texts.warning(t0, 10).expect("told");
    assert!(told.contains("3 answer(s) not yet sent (30 bytes)") && told.contains("--max-answer-bytes-held 10"));
    texts.forgotten = (1, 10);
    assert_eq!(texts.warning(t0 + WARN_EVERY / 2, 10), None);
    let told = texts.warning(t0 + WARN_EVERY, 10).expect("told again");
    assert!(told.contains("1 answer(s) not yet sent (10 bytes)"), "{told}");
}

/// An answer whose text alone is larger than the bound is the tool error E0818, and
/// holds nothing (nor forgets anything for it, which the process's registry, shared with the
/// other tests, relies on).
#[test]
fn an_answer_larger_than_the_bound_is_refused_with_e0818() {
    let text = big(SPLICED_FROM);
    let mut texts = Texts::default();
    assert!(texts.hold(text.clone(), Instant::now(), text.len()).is_ok());
    assert!(texts.hold(text.clone(), Instant::now(), text.len() - 1).is_err());
    let refused = answer_within(text.clone(), true, false, text.len() - 1);
    assert_eq!(refused["isError"], true);
    let why = refused["content"][0]["text"].as_str().expect("a text");
    assert!(why.ends_with("[E0818]") && why.contains("--max-answer-bytes-held"), "{why}");
    assert!(refused.get("structuredContent").is_none());
}

#[test]
fn the_default_bound_is_a_quarter_of_the_runs_memory_and_at_least_the_largest_result() {
    assert_eq!(
        default_max_held(crate::ranges::SERVE_MEMORY_IN_FLIGHT, crate::ranges::SERVE_MAX_RESULT_BYTES),
        DEFAULT_MAX_HELD
    );
    assert_eq!(default_max_held(64 << 20, 1 << 20), 16 << 20);
    assert_eq!(default_max_held(64 << 20, 100 << 20), 100 << 20);
}

/// A text of every kind of character, multi-byte ones and escapes across the slices'
/// edges.
fn mixed(len: usize) -> String {
    let parts = ["ab\\\"\n", "é", "€", "𝄞", "\u{1}", "x"];
    let mut raw = String::new();
    let mut i = 0;
    while raw.len() < len {
        raw.push_str(parts[i % parts.len()]);
        i += 1;
    }
    json!({"v": raw}).to_string()
}

/// Writes `sliced` to its end: the slices, or where it was cut.
fn write_all(sliced: &mut Sliced) -> (Vec<Vec<u8>>, Option<Cut>) {
    let mut slices = Vec::new();
    while let Some(slice) = sliced.next_slice() {
        match slice {
            Ok(s) => slices.push(s),
            Err(cut) => return (slices, Some(cut)),
        }
    }
    (slices, None)
}

fn held(n: u64) -> Option<bool> {
    registry().lock().held.get(&n).map(|t| t.writing)
}

/// A message written in slices is the message spliced whole, byte for byte; each slice
/// holds about SLICE bytes of the text (SLICE and a little: what ends the piece before);
/// the text is held, and counted, until its last mark is written.
#[test]
fn a_message_written_in_slices_is_the_message_spliced_whole() {
    let text = mixed(5 * SLICE + 17);
    let message =
        |answer: &Json| format!("data: {}\n\n", json!({"jsonrpc": "2.0", "id": 1, "result": answer})).into_bytes();
    let whole = splice(message(&answer(text.clone(), true, false)));
    let read: Json = serde_json::from_slice(&whole[6..]).expect("JSON");
    assert_eq!(read["result"]["content"][0]["text"], Json::String(text.clone()));
    let marked = answer(text.clone(), true, false);
    let n = numbers(&marked)[0];
    let mut sliced = Sliced::new(message(&marked)).map_err(|_| "no mark").expect("marks");
    let mut sent = Vec::new();
    let mut count = 0;
    while let Some(slice) = sliced.next_slice() {
        let slice = slice.expect("not cut");
        assert!(slice.len() <= 2 * SLICE, "{}", slice.len());
        sent.extend_from_slice(&slice);
        count += 1;
        // Claimed from the first slice, held until the last mark's end.
        if sent.len() < whole.len() {
            assert_eq!(held(n), Some(true));
        }
    }
    assert_eq!(sent, whole);
    assert!(count >= 10, "{count} slices");
    assert_eq!(held(n), None);
    // A message without marks is given back as it is.
    assert_eq!(Sliced::new(b"data: {}\n\n".to_vec()).err(), Some(b"data: {}\n\n".to_vec()));
}

/// A text forgotten before its message's first slice reaches it is written as the
/// sentence and `null`, as a whole splice writes it; one another message is being
/// written from (an event replayed) too.
#[test]
fn a_text_gone_or_being_written_elsewhere_is_written_as_gone() {
    let marked = answer(big(SPLICED_FROM), true, false);
    let message = json!({"result": marked}).to_string().into_bytes();
    let mut first = Sliced::new(message.clone()).map_err(|_| "no mark").expect("marks");
    let started = first.next_slice().expect("a slice").expect("not cut");
    assert!(started.len() >= SLICE);
    let mut replayed = Sliced::new(message.clone()).map_err(|_| "no mark").expect("marks");
    let (slices, cut) = write_all(&mut replayed);
    assert_eq!(cut, None);
    let read: Json = serde_json::from_slice(&slices.concat()).expect("JSON");
    assert_eq!(read["result"]["content"][0]["text"], GONE);
    assert_eq!(read["result"]["structuredContent"], Json::Null);
    // The whole splice does not take a text being written either.
    let spliced: Json = serde_json::from_slice(&splice(message.clone())).expect("JSON");
    assert_eq!(spliced["result"]["structuredContent"], Json::Null);
    let (rest, cut) = write_all(&mut first);
    assert_eq!(cut, None);
    let read: Json = serde_json::from_slice(&[started, rest.concat()].concat()).expect("JSON");
    assert_eq!(read["result"]["content"][0]["text"], Json::String(big(SPLICED_FROM)));
    forget(&marked);
    // Forgotten before the first slice: the sentence and null.
    let gone = answer(big(SPLICED_FROM), true, false);
    forget(&gone);
    let mut sliced = Sliced::new(json!({"result": gone}).to_string().into_bytes()).map_err(|_| "").expect("marks");
    let read: Json = serde_json::from_slice(&write_all(&mut sliced).0.concat()).expect("JSON");
    assert_eq!(read["result"]["content"][0]["text"], GONE);
    assert_eq!(read["result"]["structuredContent"], Json::Null);
}

/// A text forgotten while its message is being written cuts the message: nothing more
/// is written (a client never reads one mark written and the other not). A message
/// dropped unfinished lets its text go.
#[test]
fn a_text_forgotten_mid_message_cuts_it_and_a_message_dropped_lets_its_text_go() {
    let marked = answer(big(3 * SLICE), true, false);
    let n = numbers(&marked)[0];
    let mut sliced = Sliced::new(json!({"result": marked}).to_string().into_bytes()).map_err(|_| "").expect("marks");
    assert!(sliced.next_slice().expect("a slice").is_ok());
    registry().lock().remove(n);
    assert_eq!(sliced.next_slice().expect("the cut").err(), Some(Cut));
    assert!(sliced.next_slice().is_none());
    let marked = answer(big(3 * SLICE), true, false);
    let n = numbers(&marked)[0];
    let mut sliced = Sliced::new(json!({"result": marked}).to_string().into_bytes()).map_err(|_| "").expect("marks");
    assert!(sliced.next_slice().expect("a slice").is_ok());
    assert_eq!(held(n), Some(true));
    drop(sliced);
    assert_eq!(held(n), None);
}

/// A text being written is not let go for its age, only to make room (oldest first,
/// being written or not).
#[test]
fn a_text_being_written_is_let_go_only_to_make_room() {
    let mut texts = Texts::default();
    let t0 = Instant::now();
    let kib = |k: usize| "x".repeat(k << 10);
    let a = texts.hold(kib(100), t0, 300 << 10).expect("held");
    let b = texts.hold(kib(100), t0, 300 << 10).expect("held");
    assert_eq!(texts.claim(a), Some(100 << 10));
    assert_eq!(texts.claim(a), None);
    assert_eq!(texts.take(a), None);
    let c = texts.hold(kib(1), t0 + KEPT_FOR, 300 << 10).expect("held");
    assert_eq!(texts.held.keys().copied().collect::<Vec<_>>(), [a, c]);
    assert!(b < c);
    texts.hold(kib(250), t0 + KEPT_FOR, 300 << 10).expect("held");
    assert!(!texts.held.contains_key(&a));
    assert_eq!(texts.bytes, 251 << 10);
}

#[test]
fn expand_gives_the_values_of_a_marked_answer() {
    let text = big(SPLICED_FROM);
    let out = expand(answer(text.clone(), false, false));
    assert_eq!(out["content"][0]["text"], Json::String(text));
    assert!(out.get("structuredContent").is_none());
}

/// A text held with a ticket of a budget ([`hold_text`]) gives its bytes back however it is
/// let go: written, or, tied to an HTTP response found gone, past [`ORPHAN_KEPT_FOR`]. A
/// text alone larger than the bound is given back, not held.
#[test]
fn a_held_texts_ticket_is_given_back_when_it_is_let_go() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let budget = std::sync::Arc::new(tokio::sync::Semaphore::new(1 << 20));
    let ticket = || runtime.block_on(budget.clone().acquire_many_owned(1000)).expect("permits");
    let number = |mark: &str| read_mark(format!("{}\"", &mark[registry().prefix.len()..]).as_bytes()).expect("ours").0;
    // Written: taken out of the registry, its permits given back.
    let written = hold_text(big(SPLICED_FROM), ticket()).expect("held");
    assert_eq!(budget.available_permits(), (1 << 20) - 1000);
    let sent: Json = serde_json::from_slice(&splice(json!([written]).to_string().into_bytes())).expect("JSON");
    assert_eq!(sent[0], Json::String(big(SPLICED_FROM)));
    assert_eq!(budget.available_permits(), 1 << 20);
    // Tied to a response that is gone: orphaned, and let go once past its time.
    let stream = Stream::default();
    let orphan = hold_text(big(SPLICED_FROM), ticket()).expect("held");
    stream.tie_mark(&orphan);
    stream.tie_mark("not a mark");
    stream.gone();
    let n = number(&orphan);
    assert_eq!(registry().lock().held.get(&n).map(|t| t.orphaned.is_some()), Some(true));
    assert_eq!(budget.available_permits(), (1 << 20) - 1000);
    // Let go as its time passes (`let_go_expired`, not called here on the registry other
    // tests share: it would let go their orphans too) or to make room: removed.
    registry().lock().remove(n);
    assert_eq!(budget.available_permits(), 1 << 20);
    // Larger than the bound: given back whole, its ticket with it.
    let text = big(SPLICED_FROM);
    assert_eq!(hold_text_within(text.clone(), ticket(), text.len() - 1), Err(text));
    assert_eq!(budget.available_permits(), 1 << 20);
}

/// Texts orphaned past [`ORPHAN_KEPT_FOR`] are let go, and their tickets with them.
#[test]
fn a_ticket_is_given_back_when_its_text_is_let_go_for_its_age() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let budget = std::sync::Arc::new(tokio::sync::Semaphore::new(10));
    let ticket = runtime.block_on(budget.clone().acquire_many_owned(10)).expect("permits");
    let mut texts = Texts::default();
    let t0 = Instant::now();
    let n = texts.hold_with("x".into(), Some(ticket), t0, 1 << 20).expect("held");
    texts.orphan(&[n], t0);
    texts.let_go_expired(t0 + ORPHAN_KEPT_FOR);
    assert!(texts.held.is_empty());
    assert_eq!(budget.available_permits(), 10);
}
