//! The program side's settings file (`~/.xcc/settings.toml`), which people edit by hand: parsed
//! as a program reads it. What parses is written as the program writes it and must read back
//! to the same keys and values.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(values) = xcd_home::parse(text) else { return };
    let written = xcd_home::render(&values).expect("parsed settings can be written");
    assert_eq!(xcd_home::parse(&written).as_ref(), Ok(&values), "written settings read back");
});
