// SPDX-License-Identifier: MIT
//! The committed bindings against the headers they were written from.
//!
//! Parses `<devq/devq.h>`, `<devq/devq_resource.h>` and `<devq/devq_cpu.h>` (the copies
//! pkg-config named at build time, DEVQ_INCLUDE_DIR) and `src/lib.rs`, turns
//! every C function, struct, enum, function-pointer typedef, opaque handle
//! and object-like #define into the Rust text it must have, and fails
//! naming each item that is missing, extra or different.  The C parser
//! covers the subset the headers use (one declaration per statement, no
//! nested structs, no function-like macros); a construct it does not
//! understand fails the test rather than passing silently.
use std::collections::BTreeMap;

const HEADERS: &[&str] = &["devq.h", "devq_resource.h", "devq_cpu.h"];

/// What one item must look like, keyed by its name.
type Items = BTreeMap<String, String>;

// ---------------------------------------------------------------- lexing

fn strip_c_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.map_or(true, |l| b < l) => {
                out.push_str(&rest[..b]);
                let end = rest[b..].find("*/").expect("unterminated comment") + b + 2;
                out.push(' ');
                rest = &rest[end..];
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = &rest[l..];
                rest = rest.find('\n').map_or("", |n| &rest[n..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Identifiers, numbers and single punctuation characters; a "string"
/// is one token.
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let st = i;
            while i < cs.len() && (cs[i].is_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            out.push(cs[st..i].iter().collect());
        } else if c == '"' {
            let st = i;
            i += 1;
            while i < cs.len() && cs[i] != '"' {
                i += 1;
            }
            i += 1;
            out.push(cs[st..i].iter().collect());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars().next().map_or(false, |c| c.is_alphabetic() || c == '_')
}

/// Splits at `sep` where no (), [], {} or <> is open.
fn split_top(toks: &[String], sep: &str) -> Vec<Vec<String>> {
    let mut parts = vec![Vec::new()];
    let mut depth = 0i32;
    let mut prev = "";
    for t in toks {
        match t.as_str() {
            "(" | "[" | "{" | "<" => depth += 1,
            ">" if prev == "-" => {} // the arrow of `-> T`
            ")" | "]" | "}" | ">" => depth -= 1,
            _ => {}
        }
        prev = t.as_str();
        if depth == 0 && t == sep {
            parts.push(Vec::new());
        } else {
            parts.last_mut().unwrap().push(t.clone());
        }
    }
    if parts.last().map_or(false, |p| p.is_empty()) {
        parts.pop();
    }
    parts
}

/// Index of the token closing the bracket opened at `open`.
fn matching(toks: &[String], open: usize) -> usize {
    let mut depth = 0;
    for (i, t) in toks.iter().enumerate().skip(open) {
        match t.as_str() {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced brackets in {:?}", toks);
}

// ---------------------------------------------------------------- C side

fn rust_base(c: &str) -> String {
    match c {
        "void" => "c_void",
        "int" => "c_int",
        "char" => "c_char",
        "unsigned" => "c_uint",
        "size_t" => "usize",
        "uint64_t" => "u64",
        "uint32_t" => "u32",
        "uint16_t" => "u16",
        "uint8_t" => "u8",
        "int64_t" => "i64",
        "int32_t" => "i32",
        other => other,
    }
    .to_string()
}

/// A C type (declarator name already removed) as Rust text.
fn c_type(toks: &[String]) -> String {
    if let Some(p) = toks.iter().position(|t| t == "(") {
        // RET (*)(PARAMS): a function pointer.
        let close = matching(toks, p);
        assert!(toks[p + 1..close].iter().all(|t| t == "*"), "unsupported type {:?}", toks);
        let params_open = close + 1;
        let params_close = matching(toks, params_open);
        return format!(
            "Option<unsafe extern \"C\" {}>",
            c_fn(&toks[..p], &toks[params_open + 1..params_close])
        );
    }
    let mut base_const = false;
    let mut base = None;
    let mut ptrs: Vec<bool> = Vec::new(); // per '*': is that pointer itself const
    for t in toks {
        match t.as_str() {
            "const" if ptrs.is_empty() => base_const = true,
            "const" => *ptrs.last_mut().unwrap() = true,
            "struct" | "enum" => {}
            "*" => ptrs.push(false),
            id if is_ident(id) && base.is_none() => base = Some(rust_base(id)),
            other => panic!("unsupported C type token '{}' in {:?}", other, toks),
        }
    }
    let mut out = base.unwrap_or_else(|| panic!("no base type in {:?}", toks));
    let mut pointee_const = base_const;
    for own_const in ptrs {
        out = format!("*{} {}", if pointee_const { "const" } else { "mut" }, out);
        pointee_const = own_const;
    }
    out
}

/// `fn(params) -> ret` from a C return type and parameter list.
fn c_fn(ret: &[String], params: &[String]) -> String {
    let ps: Vec<String> = if params.len() == 1 && params[0] == "void" || params.is_empty() {
        Vec::new()
    } else {
        split_top(params, ",").iter().map(|p| c_decl(p).1).collect()
    };
    let r = c_type(ret);
    if r == "c_void" {
        format!("fn({})", ps.join(", "))
    } else {
        format!("fn({}) -> {}", ps.join(", "), r)
    }
}

/// One declarator with its type: (name, Rust type).
fn c_decl(toks: &[String]) -> (String, String) {
    if let Some(p) = toks.iter().position(|t| t == "(") {
        // RET (*name)(PARAMS)
        let close = matching(toks, p);
        let name = toks[p + 1..close].iter().find(|t| is_ident(t)).expect("fn pointer name").clone();
        let mut anon = toks.to_vec();
        anon.retain(|t| t != &name);
        return (name, c_type(&anon));
    }
    let (toks, array) = match toks.iter().position(|t| t == "[") {
        Some(b) => (&toks[..b], Some(toks[b + 1].clone())),
        None => (toks, None),
    };
    let name = toks.last().expect("empty declarator").clone();
    assert!(is_ident(&name) && toks.len() >= 2, "unnamed parameter or field: {:?}", toks);
    let ty = c_type(&toks[..toks.len() - 1]);
    match array {
        Some(n) => (name, format!("[{}; {}]", ty, n)),
        None => (name, ty),
    }
}

/// `a: T, b: U` for a struct body (multi-declarator fields split).
fn c_fields(body: &[String]) -> String {
    let mut fields = Vec::new();
    for stmt in split_top(body, ";") {
        let decls = split_top(&stmt, ",");
        // The base type is the first declarator minus its name and stars.
        let first = &decls[0];
        let name_at = if first.contains(&"(".to_string()) {
            0
        } else {
            first.iter().rposition(|t| is_ident(t) && t != "const").unwrap()
        };
        let mut base: Vec<String> = first[..name_at].to_vec();
        while base.last().map_or(false, |t| t == "*") {
            base.pop();
        }
        for (i, d) in decls.iter().enumerate() {
            let full: Vec<String> =
                if i == 0 { d.clone() } else { base.iter().chain(d.iter()).cloned().collect() };
            let (n, t) = c_decl(&full);
            fields.push(format!("{}: {}", n, t));
        }
    }
    fields.join(", ")
}

/// A decimal or 0x hexadecimal literal (Rust's `_` separators allowed).
fn parse_number(t: &str) -> Option<u128> {
    let t = t.replace('_', "");
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u128::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

fn eval_c(expr: &[String]) -> Option<u128> {
    let toks: Vec<&str> = expr.iter().map(|s| s.as_str()).filter(|t| *t != "(" && *t != ")").collect();
    let num = |t: &str| -> Option<u128> {
        match t {
            "UINT64_MAX" => Some(u64::MAX as u128),
            "UINT32_MAX" => Some(u32::MAX as u128),
            _ => parse_number(t.trim_end_matches(|c| c == 'u' || c == 'U' || c == 'l' || c == 'L')),
        }
    };
    match toks.as_slice() {
        [a] => num(a),
        [a, "<", "<", b] => Some(num(a)? << num(b)?),
        _ => None,
    }
}

fn c_items(text: &str) -> Items {
    let mut items = Items::new();
    let text = strip_c_comments(text);
    let mut body = String::new();
    let mut continued = false;
    for line in text.lines() {
        let l = line.trim();
        // The continuation lines of a multi-line macro (DEVQ_CPU_SIGNATURE__DEF)
        // belong to its #define.
        let was_continued = continued;
        continued = l.ends_with('\\');
        if was_continued {
            continue;
        }
        if let Some(def) = l.strip_prefix("#define") {
            let t = tokens(def);
            // Object-like macros with a value; function-like ones (DEVQ_ARG_*)
            // and DEVQ_API have no Rust counterpart.
            let function_like = def.trim_start().split_whitespace().next().map_or(false, |n| n.contains('('));
            if t.len() >= 2 && !function_like && t[0] != "DEVQ_API" {
                let v = eval_c(&t[1..]).unwrap_or_else(|| panic!("cannot evaluate #define {}", def));
                items.insert(t[0].clone(), format!("const {}", v));
            }
        } else if l.starts_with('#') || l == "extern \"C\" {" || l == "}" {
            continue;
        } else {
            body.push_str(line);
            body.push('\n');
        }
    }
    for stmt in split_top(&tokens(&body), ";") {
        let s: Vec<&str> = stmt.iter().map(|t| t.as_str()).collect();
        match s.as_slice() {
            ["DEVQ_API", rest @ ..] => {
                let rest: Vec<String> = rest.iter().map(|t| t.to_string()).collect();
                let open = rest.iter().position(|t| t == "(").unwrap();
                let name = rest[open - 1].clone();
                let close = matching(&rest, open);
                items.insert(name, c_fn(&rest[..open - 1], &rest[open + 1..close]));
            }
            ["typedef", "struct", tag, "{", ..] => {
                let open = 3;
                let close = matching(&stmt, open);
                let alias = &stmt[close + 1];
                assert_eq!(tag, alias, "typedef struct with a different tag");
                items.insert(alias.clone(), format!("struct {{ {} }}", c_fields(&stmt[open + 1..close])));
            }
            ["struct", tag, "{", ..] => {
                let close = matching(&stmt, 2);
                items.insert(tag.to_string(), format!("struct {{ {} }}", c_fields(&stmt[3..close])));
            }
            ["typedef", "struct", tag, alias] => {
                if tag != alias {
                    items.insert(tag.to_string(), "opaque".to_string());
                    items.insert(alias.to_string(), format!("opaque {}", tag));
                } else {
                    items.insert(alias.to_string(), "opaque".to_string());
                }
            }
            ["enum", name, "{", ..] => {
                items.insert(name.to_string(), "type c_uint".to_string());
                let close = matching(&stmt, 2);
                let mut next = 0u128;
                for v in split_top(&stmt[3..close], ",") {
                    let value = if v.len() >= 3 && v[1] == "=" {
                        eval_c(&v[2..]).unwrap_or_else(|| panic!("enum value {:?}", v))
                    } else {
                        next
                    };
                    items.insert(v[0].clone(), format!("const {}: {}", name, value));
                    next = value + 1;
                }
            }
            ["typedef", ..] if s.contains(&"(") => {
                // typedef RET (*name)(PARAMS)
                let (name, ty) = c_decl(&stmt[1..]);
                items.insert(name, format!("type {}", ty));
            }
            _ => panic!("drift: the parser does not understand this C statement: {}", s.join(" ")),
        }
    }
    items
}

// ---------------------------------------------------------------- Rust side

/// Rust type text with parameter names dropped, in the same spacing as
/// c_type produces (tokens joined by one space, then tidied).
fn rust_type(toks: &[String]) -> String {
    let mut kept: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        // `name:` inside a fn type (but not `::`).
        if is_ident(&toks[i])
            && toks.get(i + 1).map_or(false, |t| t == ":")
            && toks.get(i + 2).map_or(true, |t| t != ":")
        {
            i += 2;
            continue;
        }
        kept.push(toks[i].clone());
        i += 1;
    }
    tidy(&kept.join(" "))
}

/// One canonical spacing for type text from either side.
fn tidy(s: &str) -> String {
    tokens(s)
        .join(" ")
        .replace(" ,", ",")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace("- >", "->")
        .replace("[ ", "[")
        .replace(" ]", "]")
        .replace(" ;", ";")
        .replace(": :", "::")
        .replace(",)", ")") // rustfmt's trailing commas
        .replace(",>", ">")
}

fn eval_rust(toks: &[String]) -> Option<u128> {
    let t: Vec<&str> = toks.iter().map(|s| s.as_str()).collect();
    match t.as_slice() {
        ["u64", ":", ":", "MAX"] => Some(u64::MAX as u128),
        ["u32", ":", ":", "MAX"] => Some(u32::MAX as u128),
        [a] => parse_number(a),
        [a, "<", "<", b] => Some(parse_number(a)? << parse_number(b)?),
        _ => None,
    }
}

fn rust_items(text: &str) -> Items {
    let mut items = Items::new();
    let text = strip_c_comments(text);
    let toks = tokens(&text);
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        if t == "#" {
            // attribute: #[...] or #![...]
            let open = toks[i..].iter().position(|t| t == "[").unwrap() + i;
            i = matching(&toks, open) + 1;
        } else if t == "opaque" && toks.get(i + 1).map_or(false, |t| t == "!") && toks[i + 2] == "(" {
            let close = matching(&toks, i + 2);
            for n in split_top(&toks[i + 3..close], ",") {
                items.insert(n[0].clone(), "opaque".to_string());
            }
            i = close + 2;
        } else if t == "macro_rules" {
            let open = i + 3;
            i = matching(&toks, open) + 1;
        } else if t == "pub" && toks[i + 1] == "const" {
            let end = toks[i..].iter().position(|t| t == ";").unwrap() + i;
            let name = toks[i + 2].clone();
            let eq = toks[i..end].iter().position(|t| t == "=").unwrap() + i;
            let ty = toks[i + 4..eq].join(" ");
            let v = eval_rust(&toks[eq + 1..end]).unwrap_or_else(|| panic!("cannot evaluate const {}", name));
            let kind = match ty.as_str() {
                "u64" | "u32" | "c_int" | "c_uint" | "usize" => format!("const {}", v),
                enum_ty => format!("const {}: {}", enum_ty, v),
            };
            items.insert(name, kind);
            i = end + 1;
        } else if t == "pub" && toks[i + 1] == "type" {
            let end = toks[i..].iter().position(|t| t == ";").unwrap() + i;
            let name = toks[i + 2].clone();
            let target = &toks[i + 4..end];
            let v = if target.len() == 1 && items.get(&target[0]).map_or(false, |k| k == "opaque") {
                format!("opaque {}", target[0])
            } else {
                format!("type {}", rust_type(target))
            };
            items.insert(name, v);
            i = end + 1;
        } else if t == "pub" && toks[i + 1] == "struct" {
            let name = toks[i + 2].clone();
            let close = matching(&toks, i + 3);
            let fields: Vec<String> = split_top(&toks[i + 4..close], ",")
                .iter()
                .map(|f| {
                    let mut f: Vec<String> = f.iter().filter(|t| *t != "pub").cloned().collect();
                    // A raw identifier (r#fn) is the C field of that name.
                    if f.len() > 2 && f[0] == "r" && f[1] == "#" {
                        f.drain(..2);
                    }
                    format!("{}: {}", f[0], rust_type(&f[2..]))
                })
                .collect();
            items.insert(name, format!("struct {{ {} }}", fields.join(", ")));
            i = close + 1;
        } else if t == "pub" && toks[i + 1] == "fn" {
            let name = toks[i + 2].clone();
            let end = toks[i..].iter().position(|t| t == ";").unwrap() + i;
            let mut sig = toks[i + 1..end].to_vec();
            sig.remove(1); // the name: `fn(params) -> ret`
            items.insert(name, rust_type(&sig));
            i = end + 1;
        } else if t == "pub" && toks[i + 1] == "use" {
            i = toks[i..].iter().position(|t| t == ";").unwrap() + i + 1;
        } else {
            i += 1;
        }
    }
    items
}

// ---------------------------------------------------------------- the test

fn normalise(items: Items) -> Items {
    items.into_iter().map(|(k, v)| (k, tidy(&v))).collect()
}

/// The headers pkg-config named at build time; DEVQ_DRIFT_INCLUDE_DIR
/// checks against another copy (e.g. main's, before merging).
fn include_dir() -> String {
    std::env::var("DEVQ_DRIFT_INCLUDE_DIR").unwrap_or_else(|_| env!("DEVQ_INCLUDE_DIR").to_string())
}

fn header_items() -> Items {
    let dir = include_dir();
    let mut all = Items::new();
    for h in HEADERS {
        let path = format!("{}/devq/{}", dir, h);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {}", path, e));
        all.extend(c_items(&text));
    }
    normalise(all)
}

fn binding_items() -> Items {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs");
    normalise(rust_items(&std::fs::read_to_string(path).unwrap()))
}

#[test]
fn bindings_match_the_headers() {
    let c = header_items();
    let rust = binding_items();
    let mut problems = Vec::new();
    for (name, want) in &c {
        match rust.get(name) {
            None => problems.push(format!("missing in devq-sys: {} ({})", name, want)),
            Some(have) if have != want => {
                problems.push(format!("differs: {}\n    header:   {}\n    devq-sys: {}", name, want, have))
            }
            _ => {}
        }
    }
    for name in rust.keys() {
        if !c.contains_key(name) {
            problems.push(format!("in devq-sys but not in the headers: {}", name));
        }
    }
    assert!(
        problems.is_empty(),
        "devq-sys has drifted from {}/devq/{{{}}}:\n  {}",
        include_dir(),
        HEADERS.join(","),
        problems.join("\n  ")
    );
    // The parser really saw the API (a parser that sees nothing passes).
    assert!(c.len() > 100, "only {} items parsed from the headers", c.len());
}

/// The checker itself catches drift: a changed parameter, a new function
/// and a new field each fail.
#[test]
fn the_checker_sees_drift() {
    let base = "typedef struct devq_x { int a; } devq_x;\nDEVQ_API int devq_f(devq_x *x, size_t n);\n";
    let before = normalise(c_items(base));
    let changed = normalise(c_items(&base.replace("size_t n", "uint64_t n")));
    let added = normalise(c_items(&format!("{}DEVQ_API void devq_g(void);\n", base)));
    let field = normalise(c_items(&base.replace("int a;", "int a; uint32_t b;")));
    assert_ne!(before.get("devq_f"), changed.get("devq_f"));
    assert!(added.contains_key("devq_g") && !before.contains_key("devq_g"));
    assert_ne!(before.get("devq_x"), field.get("devq_x"));
    assert_eq!(before["devq_f"], tidy("fn(*mut devq_x, usize) -> c_int"));
    let rust = normalise(rust_items(
        "#[repr(C)] pub struct devq_x { pub a: c_int, }\n\
         extern \"C\" { pub fn devq_f(x: *mut devq_x, n: usize) -> c_int; }",
    ));
    assert_eq!(rust.get("devq_f"), before.get("devq_f"));
    assert_eq!(rust.get("devq_x"), before.get("devq_x"));
}

#[test]
fn links_and_reports_the_header_version() {
    let v = unsafe { std::ffi::CStr::from_ptr(devq_sys::devq_version()) };
    let want =
        format!("{}.{}.{}", devq_sys::DEVQ_VERSION_MAJOR, devq_sys::DEVQ_VERSION_MINOR, devq_sys::DEVQ_VERSION_PATCH);
    assert!(v.to_str().unwrap().starts_with(&want), "library {:?}, header {}", v, want);
}
