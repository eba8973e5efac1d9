//! The MODULE container: Latch loads no modules (it has no module API), so MODULE LIST is empty and
//! a load answers Redis's error for a module that failed to load, after the log line saying why.

use super::base::BASE;
use crate::command::Flags;
use crate::ctx::{Command, Ctx};
use resp::Frame;

const ADMIN: Flags = Flags::ADMIN.or(Flags::NOSCRIPT);
const LOADS: Flags = Flags::NO_ASYNC_LOADING.or(Flags::ADMIN).or(Flags::NOSCRIPT);

/// The MODULE container.
pub static COMMANDS: &[Command] =
    &[Command { name: "module", arity: -2, group: crate::command::Group::Server, subcommands: SUBCOMMANDS, ..BASE }];

const fn sub(name: &'static str, arity: i32, flags: Flags, handler: crate::ctx::Handler) -> Command {
    Command { name, arity, flags, group: crate::command::Group::Server, handler, ..BASE }
}

static SUBCOMMANDS: &[Command] = &[
    sub("module|help", 2, Flags::LOADING.or(Flags::STALE), help),
    sub("module|list", 2, ADMIN, list),
    sub("module|load", -3, LOADS, load),
    sub("module|loadex", -3, LOADS, load),
    sub("module|unload", 3, LOADS, unload),
];

const HELP: &[&str] = &[
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
];

fn help(_ctx: &mut Ctx<'_, '_>) -> Frame {
    super::server::help_reply("MODULE", HELP)
}

/// MODULE LIST: no module is loaded.
fn list(_ctx: &mut Ctx<'_, '_>) -> Frame {
    Frame::Array(Vec::new())
}

/// Redis refuses the protected subcommands unless `enable-module-command` allows them.
fn refused(ctx: &Ctx<'_, '_>) -> Option<Frame> {
    (!super::server::protected_allowed(ctx, "enable-module-command")).then(|| {
        Frame::error(
            "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        )
    })
}

/// MODULE LOAD / LOADEX: Latch has no module API, so every load fails as a failed load does in Redis.
fn load(ctx: &mut Ctx<'_, '_>) -> Frame {
    if let Some(e) = refused(ctx) {
        return e;
    }
    let path = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    ctx.srv.config.host().log(
        crate::host::LogLevel::Warning,
        &format!("Module {path} failed to load: Latch does not load Redis modules (it has no module API)"),
    );
    Frame::error("ERR Error loading the extension. Please check the server logs.")
}

/// MODULE UNLOAD: no module by that name (none is ever loaded).
fn unload(ctx: &mut Ctx<'_, '_>) -> Frame {
    if let Some(e) = refused(ctx) {
        return e;
    }
    Frame::error("ERR Error unloading module: no such module with that name")
}

#[cfg(test)]
mod tests {
    use crate::testkit::TestServer;

    #[test]
    fn no_module_is_listed_and_none_loads() {
        let ts = TestServer::new();
        let mut c = ts.client();
        assert_eq!(c.run("MODULE LIST"), "[]");
        assert!(c.run("MODULE LOAD /x.so").contains("not allowed"));
        let config = crate::config::Config::with_host(std::sync::Arc::new(crate::host::MemoryHost::default()));
        config.set("enable-module-command", "yes", true).unwrap();
        let ts = TestServer::with_config(config);
        let mut c = ts.client();
        assert!(c.run("MODULE LOAD /x.so").contains("Error loading the extension"));
        assert!(c.run("MODULE UNLOAD x").contains("no such module with that name"));
    }
}
