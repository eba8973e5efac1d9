//! The one door to Lua's parser: every chunk Latch compiles (EVAL and SCRIPT LOAD bodies, function
//! libraries, and `load` / `loadstring` inside scripts) is checked here first.
//!
//! Lua 5.1's `lua_load` hands any chunk whose first byte is `ESC` (`LUA_SIGNATURE[0]`) to the
//! undumper, which trusts the bytecode it reads: crafted bytecode breaks out of the VM (type
//! confusion, arbitrary memory reads and writes). Redis removed that branch after CVE-2015-4335: its
//! `f_parser` always runs the text parser, which stops at the `ESC` with a syntax error. Latch
//! refuses the same chunks with that same error, computed here, so a script sees what it would see
//! on Redis. The check looks at the first byte of the complete chunk: `load` with a reader function
//! collects every piece before calling [`refuse_binary`].
//!
//! As a second wall, chunks compiled from Rust go through mlua in text mode ([`compile`]), which
//! refuses binary chunks on its own.

use mlua::{Function, Lua, Table, chunk::ChunkMode};

/// The first byte of a precompiled chunk (`LUA_SIGNATURE[0]`).
const SIGNATURE: u8 = 0x1b;
/// Lua 5.1's `LUA_IDSIZE`: the size of a chunk id, terminating NUL included.
const ID_SIZE: usize = 60;

/// The error Redis's Lua gives for a chunk its text parser cannot start (`ESC` is a single-character
/// token, and no statement begins with it): `<chunk id>:1: unexpected symbol near 'char(27)'`, or
/// `Ok` for a chunk that is not precompiled.
///
/// `chunkname` is read as C reads it: up to its first NUL.
pub(super) fn refuse_binary(code: &[u8], chunkname: &[u8]) -> Result<(), Vec<u8>> {
    if code.first() != Some(&SIGNATURE) {
        return Ok(());
    }
    let mut msg = chunk_id(chunkname);
    msg.extend_from_slice(b":1: unexpected symbol near 'char(27)'");
    Err(msg)
}

/// Lua 5.1's `luaO_chunkid`: how a chunk name appears in error messages. `=name` is shown as
/// `name`, `@file` as `file` (its tail when long), and anything else (a chunk's source, as
/// `loadstring` names it by default) as `[string "first line..."]`.
fn chunk_id(name: &[u8]) -> Vec<u8> {
    let name = name.split(|&c| c == 0).next().unwrap_or_default();
    match name.first() {
        Some(b'=') => name[1..].iter().take(ID_SIZE - 1).copied().collect(),
        Some(b'@') => {
            let file = &name[1..];
            let room = ID_SIZE - b" '...' ".len() - 1;
            if file.len() > room {
                let mut out = b"...".to_vec();
                out.extend_from_slice(&file[file.len() - room..]);
                out
            } else {
                file.to_vec()
            }
        }
        _ => {
            let room = ID_SIZE - b" [string \"...\"] ".len() - 1;
            let line = name.iter().position(|&c| c == b'\n' || c == b'\r').unwrap_or(name.len());
            let len = line.min(room);
            let mut out = b"[string \"".to_vec();
            out.extend_from_slice(&name[..len]);
            if len < name.len() {
                out.extend_from_slice(b"...");
            }
            out.extend_from_slice(b"\"]");
            out
        }
    }
}

/// Compiles `code` as Lua text named `name` (`@user_script`, `@user_function`) with globals `env`.
/// The error is Lua's message (or [`refuse_binary`]'s), without decorations.
pub(super) fn compile(lua: &Lua, code: &[u8], name: &str, env: Table) -> Result<Function, String> {
    refuse_binary(code, name.as_bytes()).map_err(|m| String::from_utf8_lossy(&m).into_owned())?;
    // Stock Lua 5.1's parser interns the chunk name without anchoring it, so a collection during
    // parsing could free it (CVE-2025-49844); a live string with the same bytes is the one it
    // interns to, and this one lives until the chunk is compiled.
    let _anchor = lua.create_string(name).map_err(|e| super::lua_error_text(&e))?;
    lua.load(code)
        .set_name(name)
        .set_mode(ChunkMode::Text)
        .set_environment(env)
        .into_function()
        .map_err(|e| super::lua_error_text(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_ids_follow_lua() {
        assert_eq!(chunk_id(b"@user_script"), b"user_script");
        assert_eq!(chunk_id(b"=(load)"), b"(load)");
        assert_eq!(chunk_id(b"return 1"), b"[string \"return 1\"]");
        assert_eq!(chunk_id(b"a\nb"), b"[string \"a...\"]");
        // A dumped chunk named by its own source: C stops at the header's NUL.
        assert_eq!(chunk_id(b"\x1bLuaQ\x00\x01\x04"), b"[string \"\x1bLuaQ\"]");
        let long = [b'x'; 100];
        let id = chunk_id(&long);
        assert_eq!(id.len(), b"[string \"".len() + 43 + b"...\"]".len());
        let mut file = b"@".to_vec();
        file.extend_from_slice(&long);
        assert_eq!(chunk_id(&file).len(), 3 + 52);
        let mut eq = b"=".to_vec();
        eq.extend_from_slice(&long);
        assert_eq!(chunk_id(&eq).len(), 59);
    }

    #[test]
    fn only_precompiled_chunks_are_refused() {
        assert!(refuse_binary(b"return 1", b"@user_script").is_ok());
        assert!(refuse_binary(b"", b"@user_script").is_ok());
        assert!(refuse_binary(b"\n\x1bLua", b"@user_function").is_ok());
        assert_eq!(
            refuse_binary(b"\x1bLuaQ", b"@user_script").unwrap_err(),
            b"user_script:1: unexpected symbol near 'char(27)'"
        );
    }

    #[test]
    fn compile_never_loads_bytecode() {
        let lua = Lua::new();
        let dumped = lua.load("return 7").into_function().unwrap().dump(false);
        assert_eq!(dumped[0], SIGNATURE);
        let err = compile(&lua, &dumped, "@user_script", lua.globals()).unwrap_err();
        assert_eq!(err, "user_script:1: unexpected symbol near 'char(27)'");
        let f = compile(&lua, b"return 7", "@user_script", lua.globals()).unwrap();
        assert_eq!(f.call::<i64>(()).unwrap(), 7);
    }
}
