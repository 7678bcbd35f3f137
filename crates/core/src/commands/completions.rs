//! `dioscope completions bash|zsh|fish`: a completion script for the shell,
//! generated from the flag tables (each command's [`Cli`], fio's invocation
//! flags and the job options), printed on standard output.

use super::cli::{self, Arg, Cli, Flag, Value};
use super::{eprint_err, Command};

pub const COMMAND: Command = Command {
    name: "completions",
    usage: &[(
        "completions bash|zsh|fish",
        "a completion script for the shell, from the flag tables\n\
         (bash: source <(dioscope completions bash))",
    )],
    cli: &CLI,
    main,
};

/// completions takes the shell's name.
pub static CLI: Cli = Cli {
    positional: "bash|zsh|fish",
    flags: &[],
    subcommands: &[],
    job_options: false,
};

fn main(args: &[String]) -> i32 {
    let words = match cli::parse("completions", &CLI, args) {
        Ok(w) => w,
        Err(e) => return eprint_err(&e),
    };
    let script = match words.as_slice() {
        [Arg::Word(s)] if s == "bash" => bash(),
        [Arg::Word(s)] if s == "zsh" => zsh(),
        [Arg::Word(s)] if s == "fish" => fish(),
        _ => return eprint_err("completions needs a shell: bash, zsh or fish (e.g. dioscope completions bash)"),
    };
    super::stdout(&script);
    0
}

/// What a shell may offer after a flag.
#[derive(Debug, Clone, PartialEq)]
pub enum Offer {
    Nothing,
    Text,
    File,
    Words(Vec<String>),
}

/// One flag as the shells see it.
#[derive(Debug, Clone)]
pub struct ShellFlag {
    pub name: String,
    pub short: Option<char>,
    pub offer: Offer,
    pub help: String,
}

/// Where on the command line the shell is: the command and sub-command
/// words before the cursor (`[]`: the first word, or fio's invocation),
/// the words it may offer there, and its flags.
#[derive(Debug, Clone)]
pub struct Context {
    pub path: Vec<&'static str>,
    pub words: Vec<(String, String)>,
    pub flags: Vec<ShellFlag>,
}

fn shell_flag(f: &Flag) -> ShellFlag {
    ShellFlag {
        name: f.name.to_string(),
        short: f.short,
        offer: match f.value {
            Value::None => Offer::Nothing,
            Value::Input | Value::Output => Offer::File,
            Value::Text(_) => Offer::Text,
            v => Offer::Words(v.choices().iter().map(|s| s.to_string()).collect()),
        },
        help: f.help.to_string(),
    }
}

/// fio's invocation: its flags and every job option.
fn fio_flags() -> Vec<ShellFlag> {
    use crate::job::flags::{Arg as FA, FLAGS};
    let mut out: Vec<ShellFlag> = FLAGS
        .iter()
        .map(|f| ShellFlag {
            name: f.name.to_string(),
            short: None,
            offer: match f.arg {
                FA::None => Offer::Nothing,
                _ => Offer::Text,
            },
            help: f.help.to_string(),
        })
        .collect();
    for o in job_options() {
        if !out.iter().any(|f| f.name == o.name) {
            out.push(o);
        }
    }
    out
}

/// Every job option, as `--OPTION=VALUE`.
fn job_options() -> Vec<ShellFlag> {
    use crate::job::options::{all, Kind};
    let mut out = Vec::new();
    for d in all() {
        out.push(ShellFlag {
            name: d.name.to_string(),
            short: None,
            offer: match d.kind {
                Kind::Flag => Offer::Nothing,
                Kind::Choice(c) => Offer::Words(c.iter().map(|s| s.to_string()).collect()),
                _ if d.name.contains("filename") || d.name.ends_with("_log") => Offer::File,
                _ => Offer::Text,
            },
            help: d.help.lines().next().unwrap_or("").to_string(),
        });
    }
    out
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

fn cli_contexts(path: Vec<&'static str>, cli: &'static Cli, out: &mut Vec<Context>) {
    let mut flags: Vec<ShellFlag> = cli.flags.iter().map(shell_flag).collect();
    if cli.job_options {
        // The command's own flags win over a job option of the same name
        // (its parser reads them first).
        let own: Vec<String> = flags.iter().map(|f| f.name.clone()).collect();
        flags.extend(job_options().into_iter().filter(|f| !own.contains(&f.name)));
    }
    out.push(Context {
        path: path.clone(),
        words: cli
            .subcommands
            .iter()
            .map(|s| (s.name.to_string(), s.what.to_string()))
            .collect(),
        flags,
    });
    for s in cli.subcommands {
        let mut p = path.clone();
        p.push(s.name);
        cli_contexts(p, &s.cli, out);
    }
}

/// Every context of the command line, from the tables.
pub fn contexts() -> Vec<Context> {
    let commands = super::all();
    let mut out = vec![Context {
        path: Vec::new(),
        words: commands
            .iter()
            .map(|c| (c.name.to_string(), first_line(c.usage.first().map(|u| u.1).unwrap_or(""))))
            .collect(),
        flags: fio_flags(),
    }];
    for c in commands {
        if c.name == "run" {
            out.push(Context {
                path: vec![c.name],
                words: Vec::new(),
                flags: fio_flags(),
            });
        } else {
            cli_contexts(vec![c.name], c.cli, &mut out);
        }
    }
    out
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The case patterns that move the context one word on, joined by `sep`
/// (`|` in bash and zsh, a space in fish).
fn context_patterns(cx: &[Context], sep: &str) -> String {
    cx.iter()
        .filter(|c| !c.path.is_empty())
        .map(|c| {
            let (last, before) = c.path.split_last().unwrap_or((&"", &[]));
            quote(&format!("{} {last}", before.join(" ")))
        })
        .collect::<Vec<_>>()
        .join(sep)
}

fn offer_word(o: &Offer) -> String {
    match o {
        Offer::Nothing => String::new(),
        Offer::Text => "@text".into(),
        Offer::File => "@file".into(),
        Offer::Words(w) => w.join(" "),
    }
}

/// The bash script.
pub fn bash() -> String {
    let cx = contexts();
    let mut ctx_cases = String::new();
    let mut offers = String::new();
    for c in &cx {
        let flags: Vec<String> = c
            .flags
            .iter()
            .map(|f| match f.offer {
                Offer::Nothing => format!("--{}", f.name),
                _ => format!("--{}=", f.name),
            })
            .chain(c.flags.iter().filter_map(|f| f.short.map(|s| format!("-{s}"))))
            .collect();
        let words: Vec<&str> = c.words.iter().map(|w| w.0.as_str()).collect();
        ctx_cases.push_str(&format!(
            "        {}) flags={}; words={} ;;\n",
            quote(&c.path.join(" ")),
            quote(&flags.join(" ")),
            quote(&words.join(" "))
        ));
        for f in &c.flags {
            let o = offer_word(&f.offer);
            if o.is_empty() {
                continue;
            }
            let mut pats = vec![quote(&format!("{}|--{}", c.path.join(" "), f.name))];
            if let Some(s) = f.short {
                pats.push(quote(&format!("{}|-{s}", c.path.join(" "))));
            }
            offers.push_str(&format!("        {}) echo {} ;;\n", pats.join("|"), quote(&o)));
        }
    }
    format!(
        r#"# bash completion for dioscope. Generated by `dioscope completions bash`
# from dioscope's flag tables; do not edit.
#   source <(dioscope completions bash)
# or install as /usr/share/bash-completion/completions/dioscope

_dioscope_offer() {{
    case "$1|$2" in
{offers}    esac
}}

_dioscope() {{
    local line="${{COMP_LINE:0:COMP_POINT}}"
    local -a w
    read -ra w <<< "$line"
    [[ "$line" == *" " || ${{#w[@]}} -eq 0 ]] && w+=("")
    local cur="${{w[${{#w[@]}}-1]}}" prev=""
    (( ${{#w[@]}} > 1 )) && prev="${{w[${{#w[@]}}-2]}}"
    local ctx="" i
    for ((i = 1; i < ${{#w[@]}} - 1; i++)); do
        [[ "${{w[i]}}" == -* ]] && continue
        case "$ctx ${{w[i]}}" in
            {pats}) ctx="${{ctx:+$ctx }}${{w[i]}}" ;;
            *) break ;;
        esac
    done
    local flags="" words=""
    case "$ctx" in
{ctx_cases}    esac
    COMPREPLY=()
    local offer
    if [[ "$cur" == -*=* ]]; then
        local pre="${{cur%%=*}}="
        [[ "$COMP_WORDBREAKS" == *=* ]] && pre=""
        offer="$(_dioscope_offer "$ctx" "${{cur%%=*}}")"
        case "$offer" in
            @file) COMPREPLY=($(compgen -f -P "$pre" -- "${{cur#*=}}")) ;;
            @text|"") ;;
            *) COMPREPLY=($(compgen -W "$offer" -P "$pre" -- "${{cur#*=}}")) ;;
        esac
        return 0
    fi
    if [[ "$prev" == -* && "$prev" != *=* ]]; then
        offer="$(_dioscope_offer "$ctx" "$prev")"
        case "$offer" in
            @file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
            @text) return 0 ;;
            "") ;;
            *) COMPREPLY=($(compgen -W "$offer" -- "$cur")); return 0 ;;
        esac
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
        if [[ ${{#COMPREPLY[@]}} -eq 1 && "${{COMPREPLY[0]}}" == *= ]]; then
            compopt -o nospace 2>/dev/null
        fi
        return 0
    fi
    COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur"))
}}
complete -F _dioscope dioscope
"#,
        pats = context_patterns(&cx, "|"),
    )
}

fn zsh_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace(':', "\\:")
}

/// The zsh script.
pub fn zsh() -> String {
    let cx = contexts();
    let mut ctx_cases = String::new();
    let mut offers = String::new();
    for c in &cx {
        let entries = |want_value: bool| -> Vec<String> {
            c.flags
                .iter()
                .filter(|f| (f.offer != Offer::Nothing) == want_value)
                .map(|f| {
                    let eq = if want_value { "=" } else { "" };
                    quote(&format!("--{}{eq}:{}", f.name, zsh_escape(&f.help)))
                })
                .collect()
        };
        let words: Vec<String> = c
            .words
            .iter()
            .map(|(w, h)| quote(&format!("{w}:{}", zsh_escape(h))))
            .collect();
        ctx_cases.push_str(&format!(
            "    ({}) switches=({}); valued=({}); cmds=({}) ;;\n",
            quote(&c.path.join(" ")),
            entries(false).join(" "),
            entries(true).join(" "),
            words.join(" ")
        ));
        for f in &c.flags {
            let o = offer_word(&f.offer);
            if !o.is_empty() {
                offers.push_str(&format!(
                    "    ({}) print -r -- {} ;;\n",
                    quote(&format!("{}|--{}", c.path.join(" "), f.name)),
                    quote(&o)
                ));
            }
        }
    }
    format!(
        r#"#compdef dioscope
# zsh completion for dioscope. Generated by `dioscope completions zsh` from
# dioscope's flag tables; do not edit. Install as _dioscope in a folder of
# $fpath, or: source <(dioscope completions zsh) after compinit.

_dioscope_offer() {{
  case "$1|$2" in
{offers}  esac
}}

_dioscope() {{
  local ctx="" i
  for ((i = 2; i < CURRENT; i++)); do
    [[ "${{words[i]}}" == -* ]] && continue
    case "$ctx ${{words[i]}}" in
      ({pats}) ctx="${{ctx:+$ctx }}${{words[i]}}" ;;
      (*) break ;;
    esac
  done
  local -a switches valued cmds
  case "$ctx" in
{ctx_cases}  esac
  local cur="$PREFIX" offer prev="${{words[CURRENT-1]}}"
  if [[ "$cur" == -*=* ]]; then
    offer="$(_dioscope_offer "$ctx" "${{cur%%=*}}")"
    compset -P '*='
    case "$offer" in
      (@file) _files ;;
      (@text|"") _message 'value' ;;
      (*) compadd -- ${{=offer}} ;;
    esac
    return
  fi
  if [[ "$prev" == --* && "$prev" != *=* ]]; then
    offer="$(_dioscope_offer "$ctx" "$prev")"
    case "$offer" in
      (@file) _files; return ;;
      (@text) _message 'value'; return ;;
      ("") ;;
      (*) compadd -- ${{=offer}}; return ;;
    esac
  fi
  if [[ "$cur" == -* ]]; then
    _describe -t switches 'flag' switches
    _describe -t options 'flag' valued -S ''
    return
  fi
  (( ${{#cmds}} )) && _describe -t commands 'command' cmds
  _files
}}

if [[ "${{funcstack[1]}}" == "_dioscope" ]]; then
  _dioscope "$@"
else
  compdef _dioscope dioscope
fi
"#,
        pats = context_patterns(&cx, "|"),
    )
}

fn fish_escape(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The fish script.
pub fn fish() -> String {
    let cx = contexts();
    let mut out = String::from(
        "# fish completion for dioscope. Generated by `dioscope completions fish`\n\
         # from dioscope's flag tables; do not edit.\n\
         # Install as ~/.config/fish/completions/dioscope.fish\n\n\
         function __dioscope_ctx\n\
         \x20   set -l words (commandline -opc)\n\
         \x20   set -e words[1]\n\
         \x20   set -l ctx ''\n\
         \x20   for w in $words\n\
         \x20       string match -q -- '-*' $w; and continue\n\
         \x20       switch \"$ctx $w\"\n",
    );
    out.push_str(&format!(
        "            case {}\n                set ctx (string trim -- \"$ctx $w\")\n            case '*'\n                break\n        end\n    end\n    echo $ctx\nend\n\n\
         function __dioscope_ctx_is\n    set -l c (__dioscope_ctx)\n    test \"$c\" = \"$argv[1]\"\nend\n\n",
        context_patterns(&cx, " ")
    ));
    out.push_str("complete -c dioscope -f\n");
    for c in &cx {
        let cond = format!("-n \"__dioscope_ctx_is '{}'\"", c.path.join(" "));
        for (w, h) in &c.words {
            out.push_str(&format!(
                "complete -c dioscope {cond} -a {} -d {}\n",
                quote(w),
                fish_escape(h)
            ));
        }
        for f in &c.flags {
            let value = match &f.offer {
                Offer::Nothing => String::new(),
                Offer::Text => " -x".into(),
                Offer::File => " -r -F".into(),
                Offer::Words(w) => format!(" -x -a {}", quote(&w.join(" "))),
            };
            let short = f.short.map(|s| format!(" -s {s}")).unwrap_or_default();
            out.push_str(&format!(
                "complete -c dioscope {cond} -l {}{short}{value} -d {}\n",
                f.name,
                fish_escape(&f.help)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag of every table is in every shell's script, and every
    /// context of the scripts comes from a table.
    #[test]
    fn every_flag_of_every_table_is_offered_by_every_shell() {
        let (b, z, f) = (bash(), zsh(), fish());
        for c in super::super::all() {
            for (path, fl) in c.cli.all_flags() {
                let long = format!("--{}", fl.name);
                assert!(b.contains(&long), "bash misses {} {path:?} {long}", c.name);
                assert!(z.contains(&long), "zsh misses {} {path:?} {long}", c.name);
                assert!(
                    f.contains(&format!("-l {}", fl.name)),
                    "fish misses {} {path:?} {long}",
                    c.name
                );
            }
            assert!(b.contains(&format!(" {}", c.name)), "bash misses {}", c.name);
        }
        for fl in crate::job::flags::FLAGS {
            assert!(b.contains(&format!("--{}", fl.name)), "{}", fl.name);
        }
        for d in crate::job::options::all() {
            assert!(b.contains(&format!("--{}", d.name)), "{}", d.name);
        }
    }
}
