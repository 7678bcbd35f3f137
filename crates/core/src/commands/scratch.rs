//! `dioscope scratch create|list|destroy`: zram and loop devices and file
//! systems for experiments, recorded so that only what dioscope made is
//! ever removed (see `crate::scratch`).

use super::cli::{self, Arg, Cli, Flag, Sub, Value};
use super::{eprint_err, Command};
use crate::job::units::parse_size;
use crate::scratch::{self, FsSpec, LoopSpec};

pub const COMMAND: Command = Command {
    name: "scratch",
    usage: &[
        (
            "scratch create zram --size=4g [--no-fill]",
            "a new (hot-added) zram device, filled with incompressible data",
        ),
        (
            "scratch create loop --size=1g [--sector-size=4096]",
            "a loop device over a new file ([--direct-io=on|off] [--on=DIR])",
        ),
        (
            "scratch create fs --type=ext4|xfs|btrfs",
            "new devices with a file system, mounted ([--mkfs='-O ^extent']\n\
             [--devices=N: one fs per device; btrfs -d raid0 over all]\n\
             [--on=zram|loop] [--size=PER-DEVICE])",
        ),
        (
            "scratch list [--json]",
            "what dioscope made (leftovers of a crash are marked)",
        ),
        (
            "scratch destroy ID|--all",
            "remove what dioscope made, and nothing else",
        ),
    ],
    cli: &CLI,
    main,
};

const fn flag(name: &'static str, value: Value, example: &'static str, help: &'static str) -> Flag {
    Flag {
        name,
        short: None,
        value,
        example,
        help,
    }
}

const ON_OFF: Value = Value::Choice(&["on", "off"]);

/// scratch's sub-commands and their flags.
pub static CLI: Cli = Cli {
    positional: "create|list|destroy",
    flags: &[],
    subcommands: &[
        Sub {
            name: "create",
            what: "make a zram device, a loop device, or devices with a file system",
            cli: Cli {
                positional: "zram|loop|fs",
                flags: &[
                    flag("size", Value::Text("SIZE"), "1g", "the device's size (fs: per device)"),
                    flag("no-fill", Value::None, "", "zram: leave it empty (reads of zeros cost nothing)"),
                    flag("sector-size", Value::Choice(&["512", "4096"]), "4096", "loop, fs: the logical block size"),
                    flag("direct-io", ON_OFF, "on", "loop, fs: the loop device's direct I/O to its file"),
                    flag("on", Value::Text("DIR|zram|loop"), "/tmp", "loop: the folder of its file; fs: the devices under it"),
                    flag("type", Value::Choice(&["ext4", "xfs", "btrfs"]), "ext4", "fs: the file system"),
                    flag("mkfs", Value::Text("ARGS"), "-O ^extent", "fs: extra arguments for mkfs"),
                    flag("devices", Value::Text("N"), "2", "fs: one file system per device; btrfs -d raid0 over all"),
                ],
                subcommands: &[],
                job_options: false,
            },
        },
        Sub {
            name: "list",
            what: "what dioscope made (leftovers of a crash are marked)",
            cli: Cli {
                positional: "",
                flags: &[flag("json", Value::None, "", "print JSON")],
                subcommands: &[],
                job_options: false,
            },
        },
        Sub {
            name: "destroy",
            what: "remove what dioscope made, and nothing else",
            cli: Cli {
                positional: "ID",
                flags: &[flag("all", Value::None, "", "everything dioscope made")],
                subcommands: &[],
                job_options: false,
            },
        },
    ],
    job_options: false,
};

/// A sub-command's positional words and its flags with their values.
type SubArgs = (Vec<String>, Vec<(String, Option<String>)>);

/// The flags of `scratch SUB`, and its positional words.
fn sub_args(sub: &str, args: &[String]) -> Result<SubArgs, String> {
    let cli = &CLI.sub(sub).expect("a sub-command of the table").cli;
    let mut words = Vec::new();
    let mut flags = Vec::new();
    for w in cli::parse(&format!("scratch {sub}"), cli, args)? {
        match w {
            Arg::Flag(k, v) => flags.push((k.to_string(), v)),
            Arg::Word(x) => words.push(x),
        }
    }
    Ok((words, flags))
}

fn size_of(v: &str) -> Result<u64, String> {
    parse_size(v).map_err(|e| format!("--size={v}: {e} (e.g. --size=1g)"))
}

fn onoff(k: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "1" | "true" => Ok(true),
        "off" | "0" | "false" => Ok(false),
        _ => Err(format!("--{k}={v}: choose on or off")),
    }
}

fn main(args: &[String]) -> i32 {
    dioscope_sys::signal::install();
    // What it made is removed even after a second Ctrl-C.
    dioscope_sys::signal::finish_cleanup_on_second_interrupt();
    match args.first().map(String::as_str) {
        Some("create") => create(&args[1..]),
        Some("list") => list(&args[1..]),
        Some("destroy") => destroy(&args[1..]),
        _ => eprint_err("scratch needs create, list or destroy (e.g. dioscope scratch list)"),
    }
}

fn create(args: &[String]) -> i32 {
    let (words, o) = match sub_args("create", args) {
        Ok(x) => x,
        Err(e) => return eprint_err(&e),
    };
    let kind = match words.as_slice() {
        [k] => k,
        [] => {
            return eprint_err(
                "scratch create needs zram, loop or fs (e.g. scratch create zram --size=1g)",
            )
        }
        [_, extra, ..] => {
            return eprint_err(&format!(
                "scratch create: unexpected '{extra}'; options are written --name=value (see dioscope scratch --help)"
            ))
        }
    };
    let made = match build(kind, &o) {
        Ok(Ok(it)) if dioscope_sys::signal::stop_count() == 0 => it,
        Ok(Ok(it)) => {
            // Stopped after the last step: what was made goes too.
            let _ = scratch::destroy(&it.id);
            eprintln!("dioscope: error: scratch create: stopped by a signal; removed what it made");
            return 1;
        }
        Ok(Err(e)) => {
            eprintln!("dioscope: error: {e}");
            if dioscope_sys::signal::stop_count() > 0 {
                eprintln!("dioscope: scratch create: stopped; removed what it made");
                return 1;
            }
            return e.exit_code();
        }
        Err(e) => return eprint_err(&e),
    };
    // Made: it stays until destroyed (no longer a leftover of this process).
    if let Err(e) = scratch::persist(&made.id) {
        eprintln!("dioscope: error: {e}");
        let _ = scratch::destroy(&made.id);
        return e.exit_code();
    }
    println!("{}  {}", made.id, made.describe());
    for g in made.geometry() {
        println!(
            "  {} logical {} physical {}{}{}",
            g.device,
            g.logical_block_size,
            g.physical_block_size,
            g.fs_block_size
                .map(|b| format!(" fs-block {b}"))
                .unwrap_or_default(),
            g.mountpoint
                .map(|m| format!(" mounted at {m}"))
                .unwrap_or_default()
        );
    }
    0
}

type Made = Result<scratch::Result<scratch::Item>, String>;

/// The flags of `scratch create` each kind takes (empty: not a kind).
fn build_allowed(kind: &str) -> &'static [&'static str] {
    match kind {
        "zram" => &["size", "no-fill"],
        "loop" => &["size", "sector-size", "direct-io", "on"],
        "fs" => &[
            "type",
            "mkfs",
            "devices",
            "on",
            "size",
            "sector-size",
            "direct-io",
        ],
        _ => &[],
    }
}

fn build(kind: &str, o: &[(String, Option<String>)]) -> Made {
    let allowed = build_allowed(kind);
    if allowed.is_empty() {
        return Err(format!("scratch create {kind}: choose zram, loop or fs"));
    }
    for (k, _) in o {
        if !allowed.contains(&k.as_str()) {
            return Err(format!(
                "scratch create {kind}: unknown option --{k}; it takes --{}",
                allowed.join(", --")
            ));
        }
    }
    let val = |k: &str| -> Result<Option<&str>, String> {
        match o.iter().rev().find(|(x, _)| x == k) {
            Some((_, Some(v))) => Ok(Some(v.as_str())),
            Some((_, None)) if k == "no-fill" => Ok(Some("")),
            Some((_, None)) => Err(format!("--{k} needs a value (--{k}=…)")),
            None => Ok(None),
        }
    };
    let size = val("size")?.map(size_of).transpose()?;
    match kind {
        "zram" => {
            let Some(size) = size else {
                return Err("scratch create zram needs --size (e.g. --size=1g)".into());
            };
            Ok(scratch::create_zram(size, val("no-fill")?.is_none()))
        }
        "loop" => {
            let mut s = LoopSpec {
                size: size.ok_or("scratch create loop needs --size (e.g. --size=1g)")?,
                ..LoopSpec::default()
            };
            if let Some(v) = val("sector-size")? {
                s.sector_size = v
                    .parse()
                    .map_err(|_| format!("--sector-size={v}: 512 or 4096"))?;
            }
            if let Some(v) = val("direct-io")? {
                s.direct_io = onoff("direct-io", v)?;
            }
            s.on = val("on")?.map(Into::into);
            Ok(scratch::create_loop(&s))
        }
        _ => {
            let mut s = FsSpec {
                fstype: val("type")?
                    .ok_or("scratch create fs needs --type=ext4|xfs|btrfs")?
                    .to_string(),
                ..FsSpec::default()
            };
            if let Some(m) = val("mkfs")? {
                s.mkfs = m.to_string();
            }
            if let Some(v) = val("devices")? {
                s.devices = v
                    .parse()
                    .map_err(|_| format!("--devices={v}: a number of devices, e.g. 2"))?;
            }
            if let Some(v) = val("on")? {
                s.on = v.to_string();
            }
            if let Some(sz) = size {
                s.size = sz;
            }
            if let Some(v) = val("sector-size")? {
                s.sector_size = v
                    .parse()
                    .map_err(|_| format!("--sector-size={v}: 512 or 4096"))?;
            }
            if let Some(v) = val("direct-io")? {
                s.direct_io = onoff("direct-io", v)?;
            }
            Ok(scratch::create_fs(&s))
        }
    }
}

fn list(args: &[String]) -> i32 {
    let json = match sub_args("list", args) {
        Ok((words, _)) if !words.is_empty() => {
            return eprint_err(&format!("scratch list: unknown '{}' (it takes --json)", words[0]))
        }
        Ok((_, flags)) => !flags.is_empty(),
        Err(e) => return eprint_err(&e),
    };
    let items = match scratch::load() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("dioscope: error: {e}");
            return e.exit_code();
        }
    };
    if json {
        let v: Vec<serde_json::Value> = items
            .iter()
            .map(|i| {
                let mut v = serde_json::to_value(i).unwrap_or_default();
                v["leftover"] = scratch::Session::is_leftover(i).into();
                v["geometry"] = serde_json::to_value(i.geometry()).unwrap_or_default();
                v
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return 0;
    }
    if items.is_empty() {
        println!("no scratch devices ({})", scratch::state_path().display());
        return 0;
    }
    for i in &items {
        println!(
            "{:<10} {}{}{}",
            i.id,
            i.describe(),
            i.parent
                .as_ref()
                .map(|p| format!(" (part of {p})"))
                .unwrap_or_default(),
            if !scratch::Session::is_leftover(i) {
                String::new()
            } else {
                format!(
                    "  LEFTOVER: its process {} is gone; remove it: dioscope scratch destroy {}",
                    i.pid,
                    i.parent
                        .as_ref()
                        .filter(|p| items.iter().any(|x| &x.id == *p))
                        .unwrap_or(&i.id)
                )
            }
        );
    }
    0
}

fn destroy(args: &[String]) -> i32 {
    let (words, flags) = match sub_args("destroy", args) {
        Ok(x) => x,
        Err(e) => return eprint_err(&e),
    };
    let r = match (words.as_slice(), flags.is_empty()) {
        ([], false) => scratch::destroy_all().map(|n| println!("destroyed {n}")),
        ([id], true) => scratch::destroy(id).map(|_| println!("destroyed {id}")),
        _ => return eprint_err("scratch destroy needs one ID (from scratch list) or --all"),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("dioscope: error: {e}");
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_the_table_parses_in_both_forms() {
        for sub in CLI.subcommands {
            crate::commands::cli::check_both_forms(&sub.cli, &[], |a| sub_args(sub.name, a));
        }
        // Every flag of `create` is taken by one of its kinds.
        for f in CLI.sub("create").unwrap().cli.flags {
            let taken = ["zram", "loop", "fs"].iter().any(|k| {
                build_allowed(k).contains(&f.name)
            });
            assert!(taken, "--{} is taken by no kind", f.name);
        }
    }
}
