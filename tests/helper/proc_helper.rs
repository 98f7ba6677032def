//! A small program the process tests run instead of `sh`, `echo` or `printf`, so that the same
//! tests run on every platform. Built by the test support (`support::helper()`) with `rustc`,
//! std only. Its arguments are verbs, run in order:
//!
//! - `args A B …` (last): prints each following argument and a NUL byte;
//! - `env NAME`: prints the variable's value (nothing when unset);
//! - `out TEXT` / `outln TEXT`: prints TEXT (and a newline); `err TEXT`: TEXT and a newline on
//!   stderr;
//! - `bytes N`: prints N bytes `x`; `forever`: prints `y` lines until killed; `repeat TEXT`:
//!   prints TEXT lines until killed;
//! - `sum A B`: prints the sum of the integers A and B and a newline;
//! - `grep TEXT FILE`: prints FILE's lines that contain TEXT, then exits as grep does: 0 when
//!   one did, 1 when none did, 2 (saying why on stderr) when FILE cannot be read;
//! - `steps N MS`: writes `step I` lines on stderr, one every MS milliseconds, then `done` and
//!   a newline on stdout (a tool that reports progress);
//! - `stdin`: prints how many bytes standard input held; `cat FILE`: prints the file;
//! - `sleep MS`; `sleep_s SECONDS`; `exit CODE`;
//! - `pid FILE`: writes its pid to FILE (whole once it exists); `append FILE TEXT`: appends TEXT and a newline;
//! - `wait FILE`: waits until FILE exists;
//! - `spawn FILE`: starts itself in the background as `pid FILE sleep 300000` (a grandchild
//!   that outlives it unless its tree is killed) and does not wait for it.

use std::io::{Read, Write};
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut out = std::io::stdout();
    let next = |args: &mut dyn Iterator<Item = String>, verb: &str| {
        args.next()
            .unwrap_or_else(|| panic!("`{verb}` needs an argument"))
    };
    while let Some(verb) = args.next() {
        match verb.as_str() {
            "args" => {
                for a in args.by_ref() {
                    out.write_all(a.as_bytes()).unwrap();
                    out.write_all(b"\0").unwrap();
                }
            }
            "env" => {
                let name = next(&mut args, "env");
                if let Some(v) = std::env::var_os(&name) {
                    out.write_all(v.to_string_lossy().as_bytes()).unwrap();
                }
            }
            "out" => out.write_all(next(&mut args, "out").as_bytes()).unwrap(),
            "outln" => writeln!(out, "{}", next(&mut args, "outln")).unwrap(),
            "err" => eprintln!("{}", next(&mut args, "err")),
            "bytes" => {
                let n: usize = next(&mut args, "bytes").parse().unwrap();
                out.write_all(&vec![b'x'; n]).unwrap();
            }
            "forever" => loop {
                if out.write_all(b"y\n").is_err() {
                    std::process::exit(1);
                }
            },
            "repeat" => {
                let line = format!("{}\n", next(&mut args, "repeat"));
                loop {
                    if out.write_all(line.as_bytes()).is_err() {
                        std::process::exit(1);
                    }
                }
            }
            "sum" => {
                let a: i64 = next(&mut args, "sum").parse().unwrap();
                let b: i64 = next(&mut args, "sum").parse().unwrap();
                writeln!(out, "{}", a + b).unwrap();
            }
            "grep" => {
                let text = next(&mut args, "grep");
                let file = next(&mut args, "grep");
                let lines = std::fs::read_to_string(&file).unwrap_or_else(|e| {
                    eprintln!("grep: {file}: {e}");
                    std::process::exit(2)
                });
                let mut found = false;
                for line in lines.lines().filter(|l| l.contains(&text)) {
                    writeln!(out, "{line}").unwrap();
                    found = true;
                }
                out.flush().unwrap();
                std::process::exit(if found { 0 } else { 1 });
            }
            "steps" => {
                let n: u32 = next(&mut args, "steps").parse().unwrap();
                let ms: u64 = next(&mut args, "steps").parse().unwrap();
                for i in 0..n {
                    eprintln!("step {i}");
                    std::thread::sleep(Duration::from_millis(ms));
                }
                writeln!(out, "done").unwrap();
            }
            "cat" => {
                let file = next(&mut args, "cat");
                out.write_all(&std::fs::read(file).unwrap()).unwrap();
            }
            "stdin" => {
                let mut buf = Vec::new();
                let _ = std::io::stdin().read_to_end(&mut buf);
                write!(out, "{}", buf.len()).unwrap();
            }
            "sleep" => {
                let ms: u64 = next(&mut args, "sleep").parse().unwrap();
                out.flush().unwrap();
                std::thread::sleep(Duration::from_millis(ms));
            }
            "sleep_s" => {
                let secs: u64 = next(&mut args, "sleep_s").parse().unwrap();
                out.flush().unwrap();
                std::thread::sleep(Duration::from_secs(secs));
            }
            "exit" => {
                out.flush().unwrap();
                std::process::exit(next(&mut args, "exit").parse().unwrap());
            }
            "pid" => {
                // Written aside, then renamed: once the file exists it holds the whole pid.
                let file = next(&mut args, "pid");
                let part = format!("{file}.{}.part", std::process::id());
                std::fs::write(&part, std::process::id().to_string()).unwrap();
                std::fs::rename(&part, &file).unwrap();
            }
            "append" => {
                let file = next(&mut args, "append");
                let text = next(&mut args, "append");
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(file)
                    .unwrap();
                writeln!(f, "{text}").unwrap();
            }
            "wait" => {
                let file = next(&mut args, "wait");
                while !std::path::Path::new(&file).exists() {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            "spawn" => {
                let file = next(&mut args, "spawn");
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["pid", &file, "sleep", "300000"])
                    .stdin(std::process::Stdio::null())
                    .spawn()
                    .unwrap();
            }
            other => panic!("unknown verb `{other}`"),
        }
    }
    out.flush().unwrap();
}
