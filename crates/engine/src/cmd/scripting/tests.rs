//! Transcripts checked against redis-server 7.0.15.

use crate::testkit::TestServer;

#[test]
fn eval_conversions() {
    TestServer::new().transcript(
        r##"
        > EVAL "return 'hello'" 0
        "hello"
        > EVAL "return {1,2,3,'ciao',{1,2}}" 0
        [:1, :2, :3, "ciao", [:1, :2]]
        > EVAL "return {1, true, false, 3.99, 'x', {ok='fine'}, redis.call('ping')}" 0
        [:1, :1, (nil), :3, "x", +fine, +PONG]
        > EVAL "local a = {} a[1]=1 a[3]=3 return a" 0
        [:1]
        > EVAL "return {err='x'}" 0
        -x
        > EVAL "return redis.error_reply('My Error')" 0
        -My Error
        > EVAL "return redis.status_reply('X')" 0
        +X
        > EVAL "return {double=1.5}" 0
        ,1.5
        > EVAL "return {map={a=1}}" 0
        {"a": :1}
        > EVAL "return _G" 0
        []
        > EVAL "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}" 0
        ["7.0.15", :458767]
        > EVAL "return pcall(error, {x=1})" 0
        (nil)
        > EVAL "return redis.sha1hex('Pizza & Mandolino')" 0
        "74822d82031af7493c20eefa13bd07ec4fada82f"
        "##,
    );
}

#[test]
fn redis_call_errors() {
    TestServer::new().transcript(
        r##"
        > SET str a
        +OK
        > EVAL "return {pcall(redis.call,'incr',KEYS[1])}" 1 str
        [(nil), "ERR value is not an integer or out of range"]
        > EVAL "return redis.call('incr', KEYS[1])" 1 str
        -ERR value is not an integer or out of range script: 2bab3b661081db58bd2341920e0ba7cf5dc77b25, on @user_script:1.
        > EVAL "return redis.pcall('nosuch')" 0
        -ERR Unknown Redis command called from script
        > EVAL "return redis.call('nosuch')" 0
        -ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1.
        > EVAL "return redis.call()" 0
        -ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1.
        > EVAL "return redis.call({})" 0
        -ERR Lua redis lib command arguments must be strings or integers script: 80747816df1f4411f7c442b928fce6a814214839, on @user_script:1.
        > EVAL "return redis.call('multi')" 0
        -ERR This Redis command is not allowed from script script: c329a1a294be6bf95b44144f7502610661ae925a, on @user_script:1.
        > EVAL "return redis.call('get')" 0
        -ERR Wrong number of args calling Redis command from script script: f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1.
        > EVAL_RO "return redis.call('set','x','y')" 1 x
        -ERR Write commands are not allowed from read-only scripts. script: 71e6319f97b0fe8bdfa1c5df3ce4489946dda479, on @user_script:1.
        > EVAL "#!lua flags=no-writes\nreturn redis.call('set','x','y')" 1 x
        -ERR Write commands are not allowed from read-only scripts. script: 43f5fe910d84b5ee2ef496f122831920e4095915, on @user_script:2.
        > EVAL "return redis.setresp(4)" 0
        -ERR RESP version must be 2 or 3. script: 921c0a48021d97dfd5884aeea41875972c7804d9, on @user_script:1.
        > EVAL "return redis.setresp(3, 4)" 0
        -ERR redis.setresp() requires one argument. script: da2320ee9fcab3537eb1ee9e51df792ad3394c5c, on @user_script:1.
        > EVAL "return redis.sha1hex()" 0
        -ERR wrong number of arguments script: 3c7ce947ae74a835cc575b6ee87fb27503cb7ba4, on @user_script:1.
        > EVAL "return redis.log(1)" 0
        -ERR redis.log() requires two arguments or more. script: f5438245431406aa19fc387d93c6d03a0d5bcb0f, on @user_script:1.
        "##,
    );
}

#[test]
fn sandbox_and_script_errors() {
    TestServer::new().transcript(
        r##"
        > EVAL "error('x')" 0
        -ERR user_script:1: x script: 9851144f39f03a0d597a980c5aa79c80cb696891, on @user_script:1.
        > EVAL "error({err='MY x'})" 0
        -MY x script: 892d3143709ed90870061a291d50ce1f009cd7bf, on @user_script:1.
        > EVAL "return nil + 1" 0
        -ERR user_script:1: attempt to perform arithmetic on a nil value script: d13bc48d895ba57f297c4db70c1d256548a54e2d, on @user_script:1.
        > EVAL "return 1 +" 0
        -ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'
        > EVAL "a=1" 0
        -ERR user_script:1: Attempt to modify a readonly table script: 86eda770a6060824b090dd4df091e3bd4121279c, on @user_script:1.
        > EVAL "return a" 0
        -ERR user_script:1: Script attempted to access nonexistent global variable 'a' script: bbfcd1ececc90deec823f7fb730e4bfb2a4ba625, on @user_script:1.
        > EVAL "redis.call = 1" 0
        -ERR user_script:1: Attempt to modify a readonly table script: 69f883616b1814e2dc95cf801f324e38c5cc5ed2, on @user_script:1.
        > EVAL "setmetatable(_G, {})" 0
        -ERR Attempt to modify a readonly table script: 0bf0a51fbb051c942113de0105d3f8e18cdcddb5, on @user_script:1.
        > EVAL "local g = getmetatable(_G) g.__index = {}" 0
        -ERR user_script:1: Attempt to modify a readonly table script: b1a7e4ca615906790500da2b26a313f2ce643b80, on @user_script:1.
        > EVAL "print('x')" 0
        -ERR user_script:1: Script attempted to access nonexistent global variable 'print' script: af544869f07ee0ff98e955508566826cfc6fcf49, on @user_script:1.
        > EVAL "return loadstring(string.dump(function() return 1 end))()" 0
        -ERR user_script:1: attempt to call a nil value script: 5dcb142d767eb350dbcc8f0ae66433b0e227f5a2, on @user_script:1.
        > EVAL "return {getmetatable(_G) ~= nil, rawget(_G, 'redis') ~= nil, type(os), type(print)}" 0
        -ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: c2a6dc27451fbacf886e838d32576c0f903e4eaf, on @user_script:1.
        > EVAL "return type(newproxy)" 0
        -ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: 2db8cbf73e97a4b7d8d1a7ce472bf57302f0f369, on @user_script:1.
        > EVAL "getmetatable('').__index.upper = nil return 1" 0
        -ERR user_script:1: Attempt to modify a readonly table script: ac075ac18a268146edb19e945f6c06d3e450c70a, on @user_script:1.
        > EVAL "local mt = getmetatable('') mt.__index = {} return 1" 0
        -ERR user_script:1: Attempt to modify a readonly table script: d80bd7f1539b3be49b922de0f9fdd61d5504cdef, on @user_script:1.
        > EVAL "setmetatable(getmetatable(''), {}) return 1" 0
        -ERR Attempt to modify a readonly table script: 3a5fd6d398c3ccb169da079b30fcef86b616ca80, on @user_script:1.
        > EVAL "return {('x'):upper(), getmetatable('').__index == string}" 0
        ["X", :1]
        "##,
    );
}

#[test]
fn libraries() {
    TestServer::new().transcript(
        r##"
        > EVAL "return cjson.encode({1,2,{a=1.5}, 'x/y', {}})" 0
        "[1,2,{\"a\":1.5},\"x\\/y\",{}]"
        > EVAL "return cjson.encode({[1]=1,[3]=3})" 0
        "[1,null,3]"
        > EVAL "return cjson.encode({1/3, 1e20, 100, -0.0, 'a\\1'})" 0
        "[0.33333333333333,1e+20,100,-0,\"a\\u0001\"]"
        > EVAL "return cjson.decode('{')" 0
        -ERR user_script:1: Expected object key string but found T_END at character 2 script: 6c60bbb22c4b71b0415e4e539d6dc66cc27df21d, on @user_script:1.
        > EVAL "return bit.tohex(65535, -4)" 0
        "FFFF"
        > EVAL "return bit.band('x')" 0
        -ERR user_script:1: bad argument #1 to 'band' (number expected, got string) script: d35c9a1d4f4825ae2c0656c3cb8c9f397ca6d9b1, on @user_script:1.
        > EVAL "return tostring(math.random())" 0
        "0.39646477363839"
        > EVAL "return math.random(100)" 0
        :85
        "##,
    );
}

#[test]
fn eval_arguments_shebang_and_script_commands() {
    TestServer::new().transcript(
        r##"
        > EVAL "return 1" -1
        -ERR Number of keys can't be negative
        > EVAL "return 1" 2 a
        -ERR Number of keys can't be greater than number of args
        > EVAL "return 1" x
        -ERR value is not an integer or out of range
        > EVAL "#!lua flags=bad\nreturn 1" 0
        -ERR Unexpected flag in script shebang: bad
        > EVAL "#!lua x=1\nreturn 1" 0
        -ERR Unknown lua shebang option: x=1
        > EVAL "#!lua\nreturn 1" 0
        :1
        > EVAL "#!luax\nreturn 1" 0
        -ERR Unexpected engine in script shebang: #!luax
        > EVAL "#!lua" 0
        -ERR Invalid script shebang
        > EVALSHA_RO ffffffffffffffffffffffffffffffffffffffff 0
        -NOSCRIPT No matching script. Please use EVAL.
        > EVALSHA abc 0
        -NOSCRIPT No matching script. Please use EVAL.
        > SCRIPT LOAD "return 1"
        "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        > SCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db ffffffffffffffffffffffffffffffffffffffff
        [:1, :0]
        > EVALSHA E0E1F9FABFC9D4800C877A703B823AC0578FF8DB 0
        :1
        > EVAL "return {KEYS[1], ARGV[1], ARGV[2]}" 1 k a b
        ["k", "a", "b"]
        > SCRIPT KILL
        -NOTBUSY No scripts in execution right now.
        > FUNCTION KILL
        -NOTBUSY No scripts in execution right now.
        > SCRIPT FLUSH x
        -ERR SCRIPT FLUSH only support SYNC|ASYNC option
        > SCRIPT FLUSH
        +OK
        > SCRIPT EXISTS e0e1f9fabfc9d4800c877a703b823ac0578ff8db
        [:0]
        > SCRIPT EXISTS
        -ERR wrong number of arguments for 'script|exists' command
        > SCRIPT x
        -ERR unknown subcommand 'x'. Try SCRIPT HELP.
        > EVAL "return redis.call('select', 1)" 0
        +OK
        > SET k v
        +OK
        > EVAL "redis.setresp(3) return {redis.call('hgetall','nokey'), redis.call('get', 'nokey')}" 0
        [{}]
        "##,
    );
}

#[test]
fn multi_queues_eval() {
    TestServer::new().transcript(
        r##"
        > MULTI
        +OK
        > EVAL "return redis.call('incr', KEYS[1])" 1 c
        +QUEUED
        > EVAL "return redis.call('incr', KEYS[1])" 1 c
        +QUEUED
        > EXEC
        [:1, :2]
        "##,
    );
}

#[test]
fn functions() {
    TestServer::new().transcript(
        r##"
        > FUNCTION LOAD "#!lua name=mylib\nredis.register_function('f1', function(keys, args) return {keys[1], args[1]} end)\nredis.register_function{function_name='f2', callback=function() return redis.call('set','x','1') end, flags={'no-writes'}, description='d'}"
        "mylib"
        > FCALL f1 1 k a
        ["k", "a"]
        > FCALL f2 0
        -ERR Write commands are not allowed from read-only scripts. script: f2, on @user_function:3.
        > FCALL_RO f1 0
        -ERR Can not execute a script with write flag using *_ro command.
        > FCALL nosuch 0
        -ERR Function not found
        > FCALL f1 x
        -ERR Bad number of keys provided
        > FUNCTION LOAD "#!lua name=mylib\nredis.register_function('f1', function() return 1 end)"
        -ERR Library 'mylib' already exists
        > FUNCTION LOAD "#!lua name=lib2\nreturn math.random()"
        -ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'math'
        > FUNCTION LOAD "#!lua name=lib2\nredis.call('ping')"
        -ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'
        > FUNCTION LOAD "#!lua name=lib2\nlocal a = 1"
        -ERR No functions registered
        > FUNCTION LOAD "redis.register_function('f1', function() return 1 end)"
        -ERR Missing library metadata
        > FUNCTION LOAD "#!lua name=lib2\nredis.register_function('f1', function() return 1 end)"
        -ERR Function f1 already exists
        > FUNCTION LOAD "#!LUA name=lib3\nredis.register_function('f3', function() return 1 end)"
        "lib3"
        > FCALL F3 0
        :1
        > FUNCTION LOAD "#!lua name=lib5\nredis.register_function('F1', function() return 1 end)"
        -ERR Function F1 already exists
        > FUNCTION LOAD "#!js name=lib4\nredis.register_function('f4', function() return 1 end)"
        -ERR Engine 'js' not found
        > FUNCTION DELETE lib3
        +OK
        > FUNCTION LIST
        [{"library_name": "mylib", "engine": "LUA", "functions": [{"name": "f1", "description": (nil), "flags": ~[]}, {"name": "f2", "description": "d", "flags": ~["no-writes"]}]}]
        > FUNCTION LIST LIBRARYNAME nomatch*
        []
        > FUNCTION LIST WITHCODE LIBRARYNAME
        -ERR library name argument was not given
        > FUNCTION STATS
        {"running_script": (nil), "engines": {"LUA": {"libraries_count": :1, "functions_count": :2}}}
        > FUNCTION DELETE nosuch
        -ERR Library not found
        > FUNCTION RESTORE bad
        -ERR DUMP payload version or checksum are wrong
        > FUNCTION RESTORE x BAD
        -ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.
        > FUNCTION DELETE mylib
        +OK
        > FCALL f1 0
        -ERR Function not found
        > FUNCTION FLUSH now
        -ERR FUNCTION FLUSH only supports SYNC|ASYNC option
        > FUNCTION FLUSH a b
        -ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.
        > FUNCTION FLUSH
        +OK
        "##,
    );
}

#[test]
fn function_dump_restore_roundtrip() {
    let ts = TestServer::new();
    let mut c = ts.client();
    assert_eq!(
        c.run("FUNCTION LOAD \"#!lua name=l1\\nredis.register_function('g', function() return 7 end)\""),
        "\"l1\""
    );
    let Some(resp::Frame::Bulk(dump)) = c.cmd(&["FUNCTION", "DUMP"]) else { panic!("dump") };
    assert_eq!(c.run("FUNCTION FLUSH"), "+OK");
    assert_eq!(c.run("FCALL g 0"), "-ERR Function not found");
    assert_eq!(c.cmd(&[&b"FUNCTION"[..], b"RESTORE", &dump]).map(|f| crate::testkit::show(&f)).unwrap(), "+OK");
    assert_eq!(c.run("FCALL g 0"), ":7");
    assert_eq!(
        c.cmd(&[&b"FUNCTION"[..], b"RESTORE", &dump]).map(|f| crate::testkit::show(&f)).unwrap(),
        "-ERR Library l1 already exists"
    );
    assert_eq!(
        c.cmd(&[&b"FUNCTION"[..], b"RESTORE", &dump, b"REPLACE"]).map(|f| crate::testkit::show(&f)).unwrap(),
        "+OK"
    );
}

#[test]
fn busy_and_kill_flags() {
    // The run state other clients see while a script runs.
    let ts = TestServer::new();
    let mut c = ts.client();
    let run = ts.srv.scripting.states().next().expect("a VM");
    run.running.store(true, std::sync::atomic::Ordering::SeqCst);
    run.eval.store(true, std::sync::atomic::Ordering::SeqCst);
    run.start_ms.store(crate::clock::Clock::now_ms(&*ts.clock), std::sync::atomic::Ordering::SeqCst);
    assert_eq!(c.run("PING"), "+PONG");
    ts.clock.advance_ms(6000);
    assert_eq!(
        c.run("PING"),
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    assert_eq!(
        c.run("FUNCTION KILL"),
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    run.wrote.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(c.run("SCRIPT KILL").starts_with("-UNKILLABLE Sorry the script already executed write commands"));
    run.wrote.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(c.run("SCRIPT KILL"), "+OK");
    run.running.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(c.run("PING"), "+PONG");
}

#[test]
fn busy_check_at_command_start_uses_the_start_time() {
    // A command checks for BUSY at the time it read when it started, not by reading the clock
    // again: a script that started after that time has run for 0 ms.
    let ts = TestServer::new();
    let run = ts.srv.scripting.states().next().expect("a VM");
    run.running.store(true, std::sync::atomic::Ordering::SeqCst);
    run.eval.store(false, std::sync::atomic::Ordering::SeqCst);
    run.start_ms.store(10_000, std::sync::atomic::Ordering::SeqCst);
    ts.clock.advance_ms(1_000_000);
    let ping = ts.srv.table.get(b"ping").expect("ping");
    let busy = "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
    let show = |f: Option<resp::Frame>| f.map(|f| crate::testkit::show(&f));
    assert_eq!(show(ts.srv.busy_error(ping)).as_deref(), Some(busy));
    assert_eq!(show(ts.srv.busy_error_at(ping, Some(9_000))), None);
    assert_eq!(show(ts.srv.busy_error_at(ping, Some(14_999))), None);
    assert_eq!(show(ts.srv.busy_error_at(ping, Some(15_000))).as_deref(), Some(busy));
    assert_eq!(show(ts.srv.busy_error_at(ts.srv.table.get(b"shutdown").expect("shutdown"), Some(15_000))), None);
    run.running.store(false, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(show(ts.srv.busy_error(ping)), None);

    // Through `execute`, on a clock that moves 3 s at every read: the script has run 4 s at the
    // command's start (below the 5 s threshold), 7 s at the next read.
    struct Stepping(std::sync::atomic::AtomicU64);
    impl crate::clock::Clock for Stepping {
        fn now_ms(&self) -> u64 {
            self.now_us() / 1000
        }
        fn now_us(&self) -> u64 {
            self.0.fetch_add(3_000_000, std::sync::atomic::Ordering::SeqCst)
        }
        fn ticks_us(&self) -> u64 {
            0
        }
        fn wall_offset_ms(&self) -> i64 {
            0
        }
    }
    let clock = std::sync::Arc::new(Stepping(std::sync::atomic::AtomicU64::new(100_000_000)));
    let srv = crate::server::Server::new(crate::config::Config::new(), clock.clone());
    let mut c = srv.new_client("127.0.0.1:1".into(), "127.0.0.1:2".into());
    let run = srv.scripting.states().next().expect("a VM");
    run.running.store(true, std::sync::atomic::Ordering::SeqCst);
    let start = clock.0.load(std::sync::atomic::Ordering::SeqCst) / 1000 - 4000;
    run.start_ms.store(start, std::sync::atomic::Ordering::SeqCst);
    let ping = [bytes::Bytes::from_static(b"PING")];
    assert_eq!(show(srv.execute(&mut c, &ping)).as_deref(), Some("+PONG"));
    // One read of the timeline, at the start (the command's duration is measured in ticks).
    assert_eq!(clock.0.load(std::sync::atomic::Ordering::SeqCst) / 1000 - start, 4000 + 3000);
    run.start_ms.store(start - 3000, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(show(srv.execute(&mut c, &ping)).as_deref(), Some(busy));
    run.running.store(false, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn scripts_on_different_keys_run_concurrently() {
    // Two threads hammer EVALSHA on their own keys through the VM pool: no deadlock, no lost update.
    let ts = TestServer::new();
    let mut c = ts.client();
    let sha = c.run("SCRIPT LOAD \"return redis.call('incr', KEYS[1])\"");
    let sha = sha.trim_matches('"').to_string();
    let threads: Vec<_> = ["ka", "kb"]
        .into_iter()
        .map(|key| {
            let mut c = ts.client();
            let sha = sha.clone();
            std::thread::spawn(move || {
                for i in 1..=1000 {
                    assert_eq!(c.run(&format!("EVALSHA {sha} 1 {key}")), format!(":{i}"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no panic");
    }
    assert_eq!(c.run("MGET ka kb"), "[\"1000\", \"1000\"]");
    // Functions too: every VM loads the libraries it missed.
    c.run("FUNCTION LOAD \"#!lua name=l\\nredis.register_function('f', function(k) return redis.call('incr', k[1]) end)\"");
    let threads: Vec<_> = ["fa", "fb"]
        .into_iter()
        .map(|key| {
            let mut c = ts.client();
            std::thread::spawn(move || {
                for i in 1..=300 {
                    assert_eq!(c.run(&format!("FCALL f 1 {key}")), format!(":{i}"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no panic");
    }
    assert_eq!(c.run("SCRIPT FLUSH"), "+OK");
    assert_eq!(c.run(&format!("EVALSHA {sha} 1 ka")), "-NOSCRIPT No matching script. Please use EVAL.");
    assert_eq!(c.run("FUNCTION FLUSH"), "+OK");
    assert_eq!(c.run("FCALL f 1 fa"), "-ERR Function not found");
}

#[test]
fn min_replicas_to_write_refuses_writes() {
    // Latch has no replicas: with min-replicas-to-write and min-replicas-max-lag set, writes get
    // NOREPLICAS as on a Redis 7.0.15 primary with none connected (replies recorded there).
    TestServer::new().transcript(
        r##"
        > set x v
        +OK
        > config set min-replicas-to-write 1
        +OK
        > set x 1
        -NOREPLICAS Not enough good replicas to write.
        > get x
        "v"
        > multi
        +OK
        > set x 2
        -NOREPLICAS Not enough good replicas to write.
        > get x
        +QUEUED
        > exec
        -EXECABORT Transaction discarded because of previous errors.
        > eval "return redis.call('get','x')" 1 x
        "v"
        > eval "#!lua flags=no-writes\nreturn redis.call('get','x')" 1 x
        "v"
        > eval "#!lua\nreturn redis.call('get','x')" 1 x
        -NOREPLICAS Not enough good replicas to write.
        > eval "return redis.call('set','x',1)" 1 x
        -NOREPLICAS Not enough good replicas to write. script: 4cb91861d207e5689edc816618ab68f9d6de3b44, on @user_script:1.
        > eval "return redis.pcall('set','x',1)['err']" 1 x
        "NOREPLICAS Not enough good replicas to write."
        > config set min-replicas-max-lag 0
        +OK
        > set x 1
        +OK
        "##,
    );
}

#[test]
fn info_memory_counts_scripts_and_functions() {
    let ts = TestServer::new();
    let mut c = ts.client();
    assert_eq!(ts.srv.scripting.memory_info().scripts, 0);
    for j in 0..3 {
        c.run(&format!("SCRIPT LOAD \"return {j}\""));
    }
    c.run("FUNCTION LOAD \"#!lua name=lib\nredis.register_function('f1', function() return 1 end)\nredis.register_function('f2', function() return 2 end)\"");
    let m = ts.srv.scripting.memory_info();
    assert_eq!((m.scripts, m.script_bytes, m.functions, m.libraries), (3, 24, 2, 1));
    let Some(resp::Frame::Verbatim { text: info, .. }) = c.cmd(&["INFO", "memory"]) else { panic!("INFO reply") };
    let info = String::from_utf8_lossy(&info).into_owned();
    assert!(
        info.contains("number_of_cached_scripts:3\r\nnumber_of_functions:2\r\nnumber_of_libraries:1\r\n"),
        "{info}"
    );
    c.run("SCRIPT FLUSH ASYNC");
    assert_eq!(ts.srv.scripting.memory_info().scripts, 0);
}

#[test]
fn globals_and_protected_tables_iterate_as_in_redis() {
    // Redis marks its tables read-only; Latch guards them with proxies, which `next`, `pairs` and
    // `rawget` see through. Lists, counts and errors as redis-server 7.0.15 gives them.
    TestServer::new().transcript(
        r##"
        > EVAL "local t={} for k in pairs(_G) do t[#t+1]=k end table.sort(t) return t" 0
        ["ARGV", "KEYS", "_G", "_VERSION", "__redis__err__handler", "assert", "bit", "cjson", "cmsgpack", "collectgarbage", "coroutine", "error", "gcinfo", "getmetatable", "ipairs", "load", "loadstring", "math", "next", "pairs", "pcall", "rawequal", "rawget", "rawset", "redis", "select", "setmetatable", "string", "struct", "table", "tonumber", "tostring", "type", "unpack", "xpcall"]
        > EVAL "local t={} for k in pairs(string) do t[#t+1]=k end table.sort(t) return t" 0
        ["byte", "char", "dump", "find", "format", "gfind", "gmatch", "gsub", "len", "lower", "match", "rep", "reverse", "sub", "upper"]
        > EVAL "return {rawget(_G, 'redis') ~= nil, next(_G) ~= nil, next(redis) ~= nil, rawget(_G, 'nope')}" 0
        [:1, :1, :1]
        > EVAL "return next(1)" 0
        -ERR user_script:1: bad argument #1 to 'next' (table expected, got number) script: 3f89bafea3b9a9791a5e0a9b6b2cb2beafa74b80, on @user_script:1.
        > EVAL "return pairs(nil)" 0
        -ERR user_script:1: bad argument #1 to 'pairs' (table expected, got nil) script: a535da6440828f635b77339d464e26606059706b, on @user_script:1.
        > EVAL "return rawget(_G)" 0
        -ERR user_script:1: bad argument #2 to 'rawget' (value expected) script: 03807a84f33becc95d25104ad9d60cedca0a48eb, on @user_script:1.
        > EVAL "return next({}, 'nokey')" 0
        -ERR invalid key to 'next' script: f27dc2a9951ade42a5f85a8b584e0390da6ce499, on @user_script:1.
        > EVAL "return {pcall(next, 5)}" 0
        [(nil), "bad argument #1 to '?' (table expected, got number)"]
        > EVAL "return __redis__err__handler('x')" 0
        -ERR x
        > FUNCTION LOAD "#!lua name=gl\nredis.register_function('gl', function(k, a) local t={} for x in pairs(_G) do t[#t+1]=x end table.sort(t) return t end)\nredis.register_function('eh', function(k, a) return __redis__err__handler end)"
        "gl"
        > FCALL gl 0
        ["_G", "_VERSION", "assert", "bit", "cjson", "cmsgpack", "collectgarbage", "coroutine", "error", "gcinfo", "getmetatable", "ipairs", "load", "loadstring", "math", "next", "pairs", "pcall", "rawequal", "rawget", "rawset", "redis", "select", "setmetatable", "string", "struct", "table", "tonumber", "tostring", "type", "unpack", "xpcall"]
        > FCALL eh 0
        -ERR user_function:3: Script attempted to access nonexistent global variable '__redis__err__handler' script: eh, on @user_function:3.
        "##,
    );
}

#[test]
fn script_flush_frees_the_vms_memory() {
    // Redis starts a new interpreter on SCRIPT FLUSH (its used_memory_lua falls back to ~30 KB); the
    // idle VMs holding the old scripts are dropped here, and the functions still answer afterwards.
    let ts = TestServer::new();
    let mut c = ts.client();
    c.run("FUNCTION LOAD \"#!lua name=lib\nredis.register_function('f', function() return 7 end)\"");
    for j in 0..200 {
        c.run(&format!("EVAL \"return {j}\" 0"));
    }
    assert!(ts.srv.scripting.memory_info().vm_bytes > 0);
    assert_eq!(c.run("SCRIPT FLUSH"), "+OK");
    assert_eq!(ts.srv.scripting.memory_info().vm_bytes, 0);
    assert_eq!(c.run("FCALL f 0"), ":7");
    assert_eq!(c.run("EVAL \"return 1\" 0"), ":1");
}

#[test]
fn scripts_garbage_is_collected_before_the_heap_doubles() {
    // Redis's "EVAL does not leak in the Lua stack": after 10,000 EVALs of an INCR, used_memory_lua
    // must be under 100 KB. Left to Lua 5.1's collector, a VM (about 51 KB live) waits for twice
    // that before a cycle and swings up to ~120 KB; checked every 50 runs, it collects once 32 KB of
    // garbage built up, as Redis's periodic collector step keeps it near its live size.
    let ts = TestServer::new();
    let mut c = ts.client();
    let mut most = 0;
    for _ in 0..10_000 {
        c.run("EVAL \"return redis.call('incr', KEYS[1])\" 1 x");
        most = most.max(ts.srv.scripting.memory_info().vm_bytes);
    }
    assert_eq!(c.run("GET x"), "\"10000\"");
    assert!(most < 100 * 1024, "{most} bytes");
}

#[test]
fn every_run_sees_keys_and_argv_as_given() {
    // EVAL fills the same two tables on every run of a VM; whatever a script did to them must not
    // reach the next run, which sees exactly its own keys and arguments, as with Redis's new
    // tables per run. A function's arguments are its own tables, which a library may keep.
    TestServer::new().transcript(
        r##"
        > EVAL "KEYS[3]='x'; ARGV.foo=1; return {#KEYS, #ARGV}" 2 a b c d e
        [:3, :3]
        > EVAL "return {#KEYS, KEYS[1], KEYS[2] or 'nil', KEYS[3] or 'nil', ARGV.foo or 'nil', #ARGV}" 1 z y
        [:1, "z", "nil", "nil", "nil", :1]
        > EVAL "setmetatable(KEYS, {__index=function() return 'mt' end}); return KEYS[5]" 1 a
        "mt"
        > EVAL "return {tostring(getmetatable(KEYS)), KEYS[5] or 'nil', #KEYS}" 1 a
        ["nil", "nil", :1]
        > EVAL "table.insert(ARGV, 'q'); return #ARGV" 0 a b
        :3
        > EVAL "return {#ARGV, ARGV[1], ARGV[2] or 'nil', ARGV[3] or 'nil'}" 0 x
        [:1, "x", "nil", "nil"]
        > EVAL "KEYS[1]=nil; return #KEYS" 2 a b
        :2
        > EVAL "return {#KEYS, KEYS[1], KEYS[2] or 'nil'}" 1 q
        [:1, "q", "nil"]
        > EVAL "KEYS[1.5]=1; return 1" 1 a
        :1
        > EVAL "local n=0 for k,v in pairs(KEYS) do n=n+1 end return n" 1 a
        :1
        > EVAL "return error('x')" 3 a b c
        -ERR user_script:1: x script: 86f97a66ddf3ddcdd181e4cddbe19743babd3ae6, on @user_script:1.
        > EVAL "local n=0 for k,v in pairs(KEYS) do n=n+1 end return {n, #ARGV}" 1 a
        [:1, :0]
        > EVAL "return {KEYS[1], ARGV[1], KEYS[2] or 'nil'}" 2 k1 k2 a1
        ["k1", "a1", "k2"]
        > FUNCTION LOAD "#!lua name=keep\nlocal saved\nredis.register_function('k', function(keys) saved = saved or keys return saved[1] end)"
        "keep"
        > FCALL k 1 a
        "a"
        > FCALL k 1 b
        "a"
        > EVAL "return {#ARGV, ARGV[40]}" 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40
        [:40, "40"]
        > EVAL "return {#ARGV, ARGV[1], ARGV[40] or 'nil'}" 0 z
        [:1, "z", "nil"]
        > FUNCTION LOAD "#!lua name=g\nredis.register_function('gk', function() return KEYS end)"
        "g"
        > EVAL "return #KEYS" 1 x
        :1
        > FCALL gk 1 a
        -ERR user_function:2: Script attempted to access nonexistent global variable 'KEYS' script: gk, on @user_function:2.
        "##,
    );
}

#[test]
fn redis_call_finds_each_command_among_many() {
    // `redis.call` remembers the last four commands it found by name: six commands in turn, in
    // and out of that memory, and names that only differ in case or are not plain commands.
    TestServer::new().transcript(
        r##"
        > EVAL "local r = {} for i = 1, 3 do redis.call('set', KEYS[1], i) table.insert(r, redis.call('get', KEYS[1])) table.insert(r, redis.call('incr', KEYS[1])) table.insert(r, redis.call('strlen', KEYS[1])) table.insert(r, redis.call('type', KEYS[1])['ok']) table.insert(r, redis.call('exists', KEYS[1])) end return r" 1 k
        ["1", :2, :1, "string", :1, "2", :3, :1, "string", :1, "3", :4, :1, "string", :1]
        > EVAL "return {redis.call('GET', KEYS[1]), redis.call('Get', KEYS[1]), redis.call('get', KEYS[1]), redis.pcall('gett', KEYS[1])['err']}" 1 k
        ["4", "4", "4", "ERR Unknown Redis command called from script"]
        > EVAL "return redis.call('object', 'encoding', KEYS[1])" 1 k
        "int"
        "##,
    );
}

#[test]
fn a_run_that_grew_argv_does_not_leave_it_to_the_next() {
    // A reused table keeps its array part, and Lua's API does not tell its size: a run during which
    // the heap grew lets both tables go, so the 80 KB array this script builds becomes garbage.
    let ts = TestServer::new();
    let mut c = ts.client();
    assert_eq!(c.run("EVAL \"for i=1,5000 do ARGV[i]=i end for i=2,5000 do ARGV[i]=nil end return #ARGV\" 0 a"), ":1");
    for _ in 0..100 {
        assert_eq!(c.run("EVAL \"return ARGV[1]\" 0 b"), "\"b\"");
    }
    let bytes = ts.srv.scripting.memory_info().vm_bytes;
    assert!(bytes < 100 * 1024, "{bytes} bytes");
}

#[test]
fn reloading_libraries_does_not_pile_up_garbage() {
    // Redis's "EVAL does not leak in the Lua stack", function flavour: FUNCTION LOAD REPLACE before
    // every FCALL. Each reload's garbage is collected with it, so the VM stays near its live size
    // (~56 KB) at every step; left to Lua's collector it climbed to ~145 KB, over the 100 KB that
    // Redis's suite allows.
    let ts = TestServer::new();
    let mut c = ts.client();
    let mut most = 0;
    for _ in 0..1000 {
        c.run("FUNCTION LOAD REPLACE \"#!lua name=test\nredis.register_function('test', function(KEYS, ARGV) return redis.call('incr', KEYS[1]) end)\"");
        c.run("FCALL test 1 x");
        most = most.max(ts.srv.scripting.memory_info().vm_bytes);
    }
    assert_eq!(c.run("GET x"), "\"1000\"");
    assert!(most < 80 * 1024, "{most} bytes");
}

#[test]
fn redis_call_kept_by_a_library_works_in_later_calls() {
    // The callbacks are created once per VM; a reference kept from an earlier FCALL must act on the
    // current call's client and keys (redis-server 7.0.15 answers the same).
    TestServer::new().transcript(
        r##"
        > FUNCTION LOAD "#!lua name=kept\nlocal saved = {}\nredis.register_function('keep', function() saved.c = redis.call return 1 end)\nredis.register_function('use', function(keys) return saved.c('get', keys[1]) end)"
        "kept"
        > SET kx hello
        +OK
        > FCALL keep 0
        :1
        > FCALL use 1 kx
        "hello"
        > FUNCTION LOAD "#!lua name=bad\nredis.call('ping')\nredis.register_function('f', function() return 1 end)"
        -ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'
        "##,
    );
}

#[test]
fn nested_conversions_stay_within_the_lua_stack() {
    // Debug builds of Lua check every push against the stack space reserved for it: these nest
    // RESP3 maps from redis.call inside Lua tables, and Lua tables inside replies, deep enough to
    // need that space at every level.
    TestServer::new().transcript(
        r##"
        > HSET h a 1
        :1
        > EVAL "redis.setresp(3) local r = redis.call('hgetall', KEYS[1]) return {r, {r}, {{r, {map={x={double=2}}}}}}" 1 h
        [{"a": "1"}, [{"a": "1"}], [[{"a": "1"}, {"x": ,2}]]]
        > EVAL "return {ok='fine', err=5}" 0
        +fine
        > EVAL "return {double=1.5, 'x'}" 0
        ,1.5
        > EVAL "return {verbatim_string={format='txt', string='v'}, 'x'}" 0
        "v"
        "##,
    );
    let deep = "local t = {} local c = t for i = 1, 100 do c[1] = {} c = c[1] end c[1] = 'deep' return t";
    let want = format!("{}\"deep\"{}", "[".repeat(101), "]".repeat(101));
    assert_eq!(TestServer::new().client().run(&format!("EVAL \"{deep}\" 0")), want);
}

/// A script's first run holds every shard; once a run went through on its declared keys only, later
/// runs hold just those. Such a run that then reaches for an undeclared key whose shard another
/// client holds, before it has written anything, starts over holding every shard instead of
/// failing, and what it did in the abandoned run is not kept: the counter goes up once.
#[test]
fn undeclared_key_under_contention_restarts_the_run() {
    let ts = TestServer::new();
    let ks = &ts.srv.ks;
    let key_in = |shard: usize| (0..).map(|i| format!("k{i}")).find(|k| ks.shard_of(k.as_bytes()) == shard).unwrap();
    // The declared key above the undeclared one: the script may only spin for the lower shard.
    let (low, high) = (key_in(0), key_in(ks.nshards() - 1));
    let mut c = ts.client();
    c.run(&format!("set {low} seen"));
    let script = "if redis.call('exists', KEYS[1]) == 1 then local v = redis.call('get', ARGV[1]) \
                  redis.call('incr', KEYS[1]) return v end return 'first'";
    let eval = format!("eval \"{script}\" 1 {high} {low}");
    // First run: the declared key only (it is missing), so the script is verified.
    assert_eq!(c.run(&eval), "\"first\"");
    c.run(&format!("set {high} 0"));
    let srv = ts.srv.clone();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let guard = srv.ks.lock_shards(vec![0]);
        held_tx.send(()).unwrap();
        // Longer than the script's bounded spin for the shard (50 ms).
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(guard);
    });
    held_rx.recv().unwrap();
    assert_eq!(c.run(&eval), "\"seen\"");
    holder.join().unwrap();
    assert_eq!(c.run(&format!("get {high}")), "\"1\"");
}

/// MONITOR shows EVAL and FCALL before the commands their scripts run, which appear as `[db lua]`
/// (Redis feeds monitors from the script commands themselves).
#[test]
fn monitor_shows_the_script_then_its_commands_from_lua() {
    let ts = TestServer::new();
    let mut monitor = ts.client();
    monitor.run("MONITOR");
    let mut c = ts.client();
    c.run("EVAL \"redis.call('set', KEYS[1], ARGV[1])\" 1 foo bar");
    c.run("FUNCTION LOAD \"#!lua name=t\\nredis.register_function('t', function() return redis.call('set', 'foo', 'baz') end)\"");
    c.run("FCALL t 0");
    let got: Vec<String> = monitor.pushes().iter().map(|l| l.trim_start_matches('+').to_string()).collect();
    let shapes: Vec<&str> = got.iter().map(|l| l.split_once(' ').map_or("", |x| x.1)).collect();
    assert_eq!(shapes.len(), 5, "{got:?}");
    assert!(shapes[0].starts_with("[0 ") && shapes[0].contains("] \"EVAL\""), "{got:?}");
    assert_eq!(shapes[1], "[0 lua] \"set\" \"foo\" \"bar\"");
    assert!(shapes[2].contains("] \"FUNCTION\" \"LOAD\""), "{got:?}");
    assert!(shapes[3].contains("] \"FCALL\" \"t\" \"0\""), "{got:?}");
    assert_eq!(shapes[4], "[0 lua] \"set\" \"foo\" \"baz\"");
}

#[test]
fn a_script_past_the_threshold_is_logged_once() {
    // The script runs until the clock moves (another thread moves it), then a little more, so that
    // the instruction hook sees it past `busy-reply-threshold` (5 s by default).
    let (ts, host) = TestServer::with_host();
    let clock = ts.clock.clone();
    let mover = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(30));
        clock.advance_ms(6000);
    });
    let mut c = ts.client();
    let script = "local t0 = redis.call('time')[1] \
                  while redis.call('time')[1] == t0 do end \
                  for i = 1, 1000000 do end return 1";
    assert_eq!(c.run(&format!("EVAL \"{script}\" 0")), ":1");
    mover.join().expect("clock thread");
    let slow: Vec<String> = host
        .logged
        .lock()
        .iter()
        .filter(|(_, line)| line.starts_with("Slow script detected: still in execution after"))
        .map(|(_, line)| line.clone())
        .collect();
    assert_eq!(slow.len(), 1, "{slow:?}");
    assert!(slow[0].contains("using the SCRIPT KILL command"), "{slow:?}");
}
