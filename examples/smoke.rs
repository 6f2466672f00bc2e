fn main() {
    let engine = tdsl::Engine::new();
    let vars: tdsl::Value = serde_json::from_str(r#"{"users":[{"name":"a","score":5,"profile":{"email":"x@y"}},{"name":"b","score":"7"}], "t": "item.name", "data": "{\"a\":[1,2]}"}"#).unwrap();
    for src in std::env::args().skip(1) {
        match engine.compile_in(&src, &tdsl::Scope::from_vars(&vars)) {
            Ok(p) => {
                println!("{}", p.disassemble());
                println!("vm:  {:?}", p.eval(&vars).map(|v| v.to_string()));
                println!("ref: {:?}", p.eval_reference(&vars, &vars).map(|v| v.to_string()));
            }
            Err(ds) => { for d in ds { println!("{} {} {:?} {:?}", d.code, d.message, d.span, d.help); } }
        }
    }
}
