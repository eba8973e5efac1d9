//! Configuration lines on arbitrary bytes, as the config file and CONFIG SET take them: split like a
//! config-file line (sdssplitargs), the first word a parameter name (often a real one), the rest its
//! value. Setting must never panic; an accepted value must read back and be accepted again as is.
#![no_main]

use engine::config::Config;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static NAMES: LazyLock<Vec<String>> =
    LazyLock::new(|| Config::new().get_matching(&[b"*".as_slice()]).into_iter().map(|(k, _)| k).collect());

fuzz_target!(|data: &[u8]| {
    let Some((&pick, line)) = data.split_first() else { return };
    let Some(words) = resp::split_args(line) else { return };
    let config = Config::new();
    let (name, values): (String, &[Vec<u8>]) = match (pick & 1, words.split_first()) {
        // A real parameter, the line's words its value.
        (0, _) => (NAMES[pick as usize % NAMES.len()].clone(), &words[..]),
        (_, Some((n, rest))) => (String::from_utf8_lossy(n).into_owned(), rest),
        (_, None) => return,
    };
    let value = values.iter().map(|v| String::from_utf8_lossy(v).into_owned()).collect::<Vec<_>>().join(" ");
    if config.set(&name, &value, true).is_ok()
        && let Some(shown) = config.get(&name)
        && !engine::testkit::redis_cannot_reload(&name, &shown)
    {
        assert!(config.set(&name, &shown, true).is_ok(), "{name} {value:?} -> {shown:?} not accepted back");
        assert_eq!(config.get(&name).as_deref(), Some(shown.as_str()));
    }
});
