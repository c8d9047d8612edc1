//! `#[kernel]`: the attribute a Rust kernel carries so that fatlink's
//! device link knows its Rust signature. Kernel crates use it through
//! fatlink-device (`#[fatlink_device::kernel]`, or `use
//! fatlink_device::kernel;` then `#[kernel]`); docs/device-rust.md.
//!
//! ```ignore
//! #[fatlink_device::kernel]
//! #[no_mangle]
//! pub unsafe extern "ptx-kernel" fn axpy(a: f32, x: *const f32, y: *mut f32, n: u32) { ... }
//! ```
//!
//! The function is kept as it is. Beside it the macro emits:
//!
//! - **Compile-time checks.** Every argument type must be `Copy` (a
//!   generic bound, checked by rustc with the argument's own span); and,
//!   by the argument's tokens, no reference (`&T`, `&mut T`), no slice or
//!   `str`, no pointer to a slice, `str` or `dyn` (two words at the ABI),
//!   no owned host type (`Vec`, `Box`, `String`, ...), no `impl` or `dyn`.
//!   Each error names the kernel, the argument and what to pass instead.
//! - **The signature record**: one line of module-level assembly (through
//!   `fatlink_device::__kernel_record!`, a `global_asm!` with
//!   `options(raw)`), a PTX comment:
//!
//!   ```text
//!   // fatlink-kernel-signature 1 axpy(a: f32, x: *const f32, y: *mut f32, n: u32)
//!   ```
//!
//!   Module asm survives rustc at every opt-level, in the bitcode of
//!   whichever codegen unit rustc puts it in (an exported `static` would
//!   too over `core`, but over the minicore a `static` needs the
//!   `drop_in_place` lang item, whose name changes between rustc
//!   versions). fatlink's device link reads the line, checks it against
//!   the kernel's IR, uses it for the kernel manifest and the signature
//!   checks, and removes it before codegen (lto/Link.cpp; docs/abi.md
//!   "The kernel signature record"). Left in by another toolchain, it is a
//!   comment in the PTX.
//!
//! No dependencies (no syn, no quote): the build machines are offline, and
//! a kernel's signature is simple enough to walk as token trees.
extern crate proc_macro;

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// The record's first line; lto/Link.cpp reads this version.
const RECORD_HEADER: &str = "// fatlink-kernel-signature 1";

/// Records a `pub unsafe extern "ptx-kernel" fn` kernel's Rust signature
/// in its device bitcode and checks its arguments at compile time (see
/// the crate's documentation).
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out = item.clone();
    let mut errors = Errors::default();
    if let Some(t) = attr.into_iter().next() {
        errors.add(t.span(), "#[kernel] takes no arguments".to_string());
    }
    let extra = expand(item, &mut errors);
    if errors.list.is_empty() {
        out.extend(extra);
    } else {
        out.extend(errors.list);
    }
    out
}

#[derive(Default)]
struct Errors {
    list: Vec<TokenTree>,
}

impl Errors {
    /// `::fatlink_device::__compile_error! { "msg" }` at `span` (a
    /// `#![no_core]` crate has no `compile_error!` in scope).
    fn add(&mut self, span: Span, msg: String) {
        let mut lit = Literal::string(&msg);
        lit.set_span(span);
        let mut bang = Punct::new('!', Spacing::Alone);
        bang.set_span(span);
        let mut body = Group::new(Delimiter::Brace, TokenStream::from(TokenTree::Literal(lit)));
        body.set_span(span);
        self.list.extend(path(&["fatlink_device", "__compile_error"], span));
        self.list.push(TokenTree::Punct(bang));
        self.list.push(TokenTree::Group(body));
    }
}

fn is_ident(t: &TokenTree, s: &str) -> bool {
    matches!(t, TokenTree::Ident(i) if i.to_string() == s)
}

fn is_punct(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

/// One argument of the kernel: its name ("_" where the pattern is not a
/// plain name), its type's tokens and its type as the record writes it.
struct Arg {
    name: String,
    ty: Vec<TokenTree>,
    spelling: String,
}

/// The checks and the record for the kernel `item`; errors into `errors`.
fn expand(item: TokenStream, errors: &mut Errors) -> TokenStream {
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    let mut i = 0;
    let mut no_mangle = false;
    // Outer attributes: `#[...]`.
    while i + 1 < tokens.len() && is_punct(&tokens[i], '#') {
        if let TokenTree::Group(g) = &tokens[i + 1] {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            let first = inner.first();
            let unsafe_no_mangle = first.is_some_and(|t| is_ident(t, "unsafe"))
                && matches!(inner.get(1), Some(TokenTree::Group(u))
                    if u.stream().into_iter().next().is_some_and(|t| is_ident(&t, "no_mangle")));
            if first.is_some_and(|t| is_ident(t, "no_mangle")) || unsafe_no_mangle {
                no_mangle = true;
            }
        }
        i += 2;
    }
    let start = tokens.first().map_or(Span::call_site(), |t| t.span());
    // Visibility, qualifiers, ABI.
    let mut abi: Option<(String, Span)> = None;
    let mut is_unsafe = false;
    while i < tokens.len() && !is_ident(&tokens[i], "fn") {
        match &tokens[i] {
            TokenTree::Ident(id) if id.to_string() == "extern" => {
                if let Some(TokenTree::Literal(l)) = tokens.get(i + 1) {
                    abi = Some((l.to_string(), l.span()));
                    i += 1;
                } else {
                    abi = Some(("\"C\"".to_string(), id.span()));
                }
            }
            TokenTree::Ident(id) if id.to_string() == "unsafe" => is_unsafe = true,
            _ => {}
        }
        i += 1;
    }
    let Some(TokenTree::Ident(name)) = tokens.get(i + 1) else {
        errors.add(
            start,
            "#[kernel] goes on a kernel: `pub unsafe extern \"ptx-kernel\" fn name(...)`".into(),
        );
        return TokenStream::new();
    };
    let kernel = name.to_string();
    match &abi {
        Some((a, _)) if a == "\"ptx-kernel\"" => {}
        Some((a, span)) => errors.add(
            *span,
            format!("#[kernel] fn {kernel}: a kernel is `extern \"ptx-kernel\"`, not `extern {a}`"),
        ),
        None => errors.add(
            name.span(),
            format!("#[kernel] fn {kernel}: a kernel is `pub unsafe extern \"ptx-kernel\" fn {kernel}(...)`"),
        ),
    }
    let _ = is_unsafe; // safe kernels are rustc's business (it allows them)
    if !no_mangle {
        errors.add(
            name.span(),
            format!(
                "#[kernel] fn {kernel}: a kernel needs #[no_mangle] (or #[unsafe(no_mangle)]), so that the \
                 host launches it by the name `{kernel}`"
            ),
        );
    }
    i += 2;
    if tokens.get(i).is_some_and(|t| is_punct(t, '<')) {
        errors.add(
            tokens[i].span(),
            format!("#[kernel] fn {kernel}: a kernel cannot be generic (it has one name in the GPU program)"),
        );
        return TokenStream::new();
    }
    let Some(TokenTree::Group(params)) = tokens.get(i) else {
        errors.add(
            name.span(),
            format!("#[kernel] fn {kernel}: expected its parameter list"),
        );
        return TokenStream::new();
    };
    // A return type: `-> T` before the body.
    if tokens.get(i + 1).is_some_and(|t| is_punct(t, '-')) && tokens.get(i + 2).is_some_and(|t| is_punct(t, '>')) {
        let ret: Vec<TokenTree> = tokens[i + 3..]
            .iter()
            .take_while(|t| {
                !matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace) && !is_ident(t, "where")
            })
            .cloned()
            .collect();
        if spell(&ret) != "()" {
            errors.add(
                tokens[i + 1].span(),
                format!("#[kernel] fn {kernel}: a kernel returns nothing; write results through a `*mut` argument"),
            );
        }
    }

    let args = split_args(params.stream());
    for a in &args {
        check_arg(&kernel, a, errors);
    }
    if !errors.list.is_empty() {
        return TokenStream::new();
    }

    // fn __fatlink_kernel_checks() { ::fatlink_device::__kernel::arg::<T>(); ... }
    let mut calls = TokenStream::new();
    for a in &args {
        let span = a.ty.first().map_or(Span::call_site(), |t| t.span());
        let mut call: Vec<TokenTree> = path(&["fatlink_device", "__kernel", "arg"], span);
        call.push(punct(':', Spacing::Joint, span));
        call.push(punct(':', Spacing::Alone, span));
        call.push(punct('<', Spacing::Alone, span));
        call.extend(a.ty.iter().cloned());
        call.push(punct('>', Spacing::Alone, span));
        call.push(TokenTree::Group(Group::new(Delimiter::Parenthesis, TokenStream::new())));
        call.push(punct(';', Spacing::Alone, span));
        calls.extend(call);
    }
    let list: Vec<String> = args.iter().map(|a| format!("{}: {}", a.name, a.spelling)).collect();
    let record = format!("{RECORD_HEADER} {kernel}({})", list.join(", "));
    let code = format!(
        "#[doc(hidden)]\n\
         #[allow(dead_code, non_snake_case)]\n\
         const _: () = {{ fn __fatlink_kernel_checks() {{ __CALLS__ }} }};\n\
         ::fatlink_device::__kernel_record!({});\n",
        Literal::string(&record)
    );
    // Splice the calls (with the arguments' spans) into the parsed code.
    let parsed: TokenStream = code.parse().expect("the macro's own code parses");
    replace_marker(parsed, &calls)
}

/// `parsed` with the identifier `__CALLS__` replaced by `calls`.
fn replace_marker(parsed: TokenStream, calls: &TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    for t in parsed {
        match t {
            TokenTree::Ident(ref i) if i.to_string() == "__CALLS__" => out.extend(calls.clone()),
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), replace_marker(g.stream(), calls));
                ng.set_span(g.span());
                out.extend([TokenTree::Group(ng)]);
            }
            other => out.extend([other]),
        }
    }
    out
}

fn punct(c: char, spacing: Spacing, span: Span) -> TokenTree {
    let mut p = Punct::new(c, spacing);
    p.set_span(span);
    TokenTree::Punct(p)
}

/// `::a::b::c`
fn path(segments: &[&str], span: Span) -> Vec<TokenTree> {
    let mut out = Vec::new();
    for s in segments {
        out.push(punct(':', Spacing::Joint, span));
        out.push(punct(':', Spacing::Alone, span));
        out.push(TokenTree::Ident(Ident::new(s, span)));
    }
    out
}

/// The parameter list split at its top-level commas (commas inside
/// `<...>` belong to a type: `Pair<u32, f32>`).
fn split_args(params: TokenStream) -> Vec<Arg> {
    let mut parts: Vec<Vec<TokenTree>> = vec![Vec::new()];
    let mut depth = 0i32;
    let mut prev_dash = false;
    for t in params {
        match &t {
            TokenTree::Punct(p) if p.as_char() == ',' && depth == 0 => {
                parts.push(Vec::new());
                prev_dash = false;
                continue;
            }
            TokenTree::Punct(p) if p.as_char() == '<' => depth += 1,
            TokenTree::Punct(p) if p.as_char() == '>' && !prev_dash => depth -= 1,
            _ => {}
        }
        prev_dash = is_punct(&t, '-');
        parts.last_mut().unwrap().push(t);
    }
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            // Skip parameter attributes, then `pattern: type`.
            let mut k = 0;
            while k + 1 < p.len() && is_punct(&p[k], '#') {
                k += 2;
            }
            let colon = (k..p.len())
                .find(|&j| {
                    matches!(&p[j], TokenTree::Punct(c) if c.as_char() == ':' && c.spacing() == Spacing::Alone)
                        && !(j > 0 && matches!(&p[j - 1], TokenTree::Punct(c) if c.as_char() == ':'))
                })
                .unwrap_or(p.len());
            let pat = &p[k..colon];
            let name = match pat {
                [TokenTree::Ident(i)] => i.to_string(),
                [m, TokenTree::Ident(i)] if is_ident(m, "mut") => i.to_string(),
                _ => "_".to_string(),
            };
            let ty: Vec<TokenTree> = p.get(colon + 1..).map_or(Vec::new(), |s| s.to_vec());
            let spelling = spell(&ty);
            Arg { name, ty, spelling }
        })
        .collect()
}

/// A type's tokens as Rust writes them: `*const f32`, `Pair<u32, f32>`,
/// `[f32; 4]`, `my::Pair`.
fn spell(tokens: &[TokenTree]) -> String {
    let mut s = String::new();
    let mut prev_word = false;
    for t in tokens {
        match t {
            TokenTree::Ident(i) => {
                if prev_word {
                    s.push(' ');
                }
                s += &i.to_string();
                prev_word = true;
            }
            TokenTree::Literal(l) => {
                if prev_word {
                    s.push(' ');
                }
                s += &l.to_string();
                prev_word = true;
            }
            TokenTree::Punct(p) => {
                let c = p.as_char();
                if c == '-' || (prev_word && (c == '*' || c == '&' || c == '\'')) {
                    s.push(' ');
                }
                s.push(c);
                if c == ',' || c == ';' || (c == '>' && s.ends_with("->")) {
                    s.push(' ');
                }
                prev_word = false;
            }
            TokenTree::Group(g) => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                // `*const [f32]`, `*mut (u32, f32)`; but `fn(u32)`.
                let spaced = match g.delimiter() {
                    Delimiter::None | Delimiter::Bracket => true,
                    Delimiter::Parenthesis => !s.ends_with("fn"),
                    Delimiter::Brace => false,
                };
                if prev_word && spaced {
                    s.push(' ');
                }
                s += open;
                s += &spell(&inner);
                s += close;
                prev_word = g.delimiter() == Delimiter::None;
            }
        }
    }
    s
}

/// The last path segment's name of a type (`Vec` in `alloc::vec::Vec<u8>`).
fn last_segment(ty: &[TokenTree]) -> Option<String> {
    let mut last = None;
    for t in ty {
        match t {
            TokenTree::Ident(i) => last = Some(i.to_string()),
            TokenTree::Punct(p) if p.as_char() == '<' => break,
            TokenTree::Punct(p) if p.as_char() == ':' => {}
            _ => break,
        }
    }
    last
}

/// Rejects what can never be a kernel argument, by its tokens; rustc checks
/// `Copy` afterwards (the calls `expand` emits).
fn check_arg(kernel: &str, a: &Arg, errors: &mut Errors) {
    let Some(first) = a.ty.first() else {
        errors.add(
            Span::call_site(),
            format!("#[kernel] fn {kernel}: argument `{}` has no type", a.name),
        );
        return;
    };
    let span = first.span();
    let what = |how: &str, instead: &str| {
        format!(
            "#[kernel] fn {kernel}: argument `{}: {}` {how}; {instead}",
            a.name, a.spelling
        )
    };
    let elem_ptr = |inner: &[TokenTree]| -> String {
        // `&[f32]` / `&mut [f32]` -> `*const f32` / `*mut f32`.
        let mutable = inner.first().is_some_and(|t| is_ident(t, "mut"));
        let rest = if mutable { &inner[1..] } else { inner };
        let elem = match rest.first() {
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => {
                let v: Vec<TokenTree> = g.stream().into_iter().collect();
                spell(&v)
            }
            _ => spell(rest),
        };
        format!("{} {elem}", if mutable { "*mut" } else { "*const" })
    };
    if is_punct(first, '&') {
        let mut inner = &a.ty[1..];
        // `&&T`: the first '&' is joint with the second.
        if inner.first().is_some_and(|t| is_punct(t, '&')) {
            inner = &inner[1..];
        }
        if matches!(inner.first(), Some(TokenTree::Punct(p)) if p.as_char() == '\'') {
            inner = &inner[inner.len().min(2)..];
        }
        let slice = inner
            .iter()
            .any(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket));
        let instead = if slice {
            format!("pass a raw pointer `{}` and the length as an integer", elem_ptr(inner))
        } else {
            format!("pass a raw pointer `{}` to device memory", elem_ptr(inner))
        };
        errors.add(
            span,
            what(
                "is a reference, which cannot point into device memory from the host",
                &instead,
            ),
        );
        return;
    }
    if let TokenTree::Group(g) = first {
        if g.delimiter() == Delimiter::Bracket && !g.stream().into_iter().any(|t| is_punct(&t, ';')) {
            errors.add(
                span,
                what(
                    "is a slice, which has no size a kernel can take",
                    &format!("pass a raw pointer `{}` and the length as an integer", elem_ptr(&a.ty)),
                ),
            );
            return;
        }
    }
    if is_ident(first, "impl") || is_ident(first, "dyn") {
        errors.add(
            span,
            what(
                "is not a concrete type",
                "a kernel takes `Copy` values and raw pointers",
            ),
        );
        return;
    }
    if is_punct(first, '*') {
        // The pointee of `*const T` / `*mut T`.
        let pointee = a.ty.get(2..).unwrap_or(&[]);
        let fat = match pointee.first() {
            Some(TokenTree::Group(g)) => {
                g.delimiter() == Delimiter::Bracket && !g.stream().into_iter().any(|t| is_punct(&t, ';'))
            }
            Some(t) => is_ident(t, "str") || is_ident(t, "dyn"),
            None => false,
        };
        if fat {
            let elem = match pointee.first() {
                Some(TokenTree::Group(g)) => spell(&g.stream().into_iter().collect::<Vec<_>>()),
                _ => "u8".to_string(),
            };
            let kw = a.ty.get(1).map_or("const".to_string(), |t| t.to_string());
            errors.add(
                span,
                what(
                    "is a pointer with a length (two values at the kernel ABI)",
                    &format!("pass `*{kw} {elem}` and the length as an integer"),
                ),
            );
        }
        return;
    }
    if let Some(seg) = last_segment(&a.ty) {
        let owned = [
            "Box", "Vec", "String", "Rc", "Arc", "VecDeque", "HashMap", "BTreeMap", "HashSet", "BTreeSet", "Cow",
            "RefCell", "Cell", "Mutex",
        ];
        if seg == "str" {
            errors.add(
                span,
                what("is a string slice", "pass `*const u8` and the length as an integer"),
            );
        } else if owned.contains(&seg.as_str()) {
            errors.add(
                span,
                what(
                    &format!("is a host `{seg}`, which owns host memory and is not `Copy`"),
                    "copy the data to device memory and pass a raw pointer (`*const T` or `*mut T`) and a length",
                ),
            );
        }
    }
}
