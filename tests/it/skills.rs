//! `[skills.NAME]`: the Skills extension (SEP-2640) — the capability, `skills/list` (paged,
//! front matter verbatim, every file with its digest) and `skills/get` in both eras, `skill://`
//! resources with the files rules, `list_changed` when a skill changes, and `check`'s warnings
//! for the skills left out.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Fixture, Server, list_all};

const SKILL: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1\"\n  tags: [pdf, forms]\n---\n\n# PDF processing\n\nSee `references/FORMS.md`.\n";

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write(".agents/skills/pdf-processing/SKILL.md", SKILL);
    f.write(
        ".agents/skills/pdf-processing/references/FORMS.md",
        "# Forms\n",
    );
    f.write(
        ".agents/skills/pdf-processing/scripts/extract.py",
        "print('x')\n",
    );
    f.write(".agents/skills/pdf-processing/.env", "SECRET=1\n");
    f.write(".agents/skills/pdf-processing/build/out.bin", "ignored\n");
    f.write(".agents/skills/.gitignore", "build/\n");
    f.write(
        ".agents/skills/git-workflow/SKILL.md",
        "---\nname: git-workflow\ndescription: Branch and commit the team's way\n---\nUse topic branches.\n",
    );
    // Left out: a name that is not the folder's, no front matter.
    f.write(
        ".agents/skills/misnamed/SKILL.md",
        "---\nname: other\ndescription: d\n---\n",
    );
    f.write(".agents/skills/bare/SKILL.md", "# no front matter\n");
    f.write(".agents/skills/README.md", "not a skill\n");
    f.manifest("[skills.team]\nroot = \".agents/skills\"\n");
    f
}

fn sha(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

fn uris(entry: &Value) -> Vec<String> {
    entry["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn skills_are_listed_with_front_matter_and_digests() {
    let f = fixture();
    let mut s = f.serve();
    let init = s.initialize("2025-11-25");
    assert_eq!(
        init["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({}),
        "{init}"
    );
    assert!(init["capabilities"]["resources"].is_object());

    let list = s.ok("skills/list", json!({}));
    // A handshake-era answer has no `resultType` (rmcp shapes it for the era; the
    // stateless test below sees it).
    assert!(list.get("resultType").is_none(), "{list}");
    assert!(
        list["ttlMs"].is_u64() && list["cacheScope"] == "public",
        "{list}"
    );
    let skills = list["skills"].as_array().expect("skills");
    let names: Vec<&str> = skills
        .iter()
        .filter_map(|s| s["frontmatter"]["name"].as_str())
        .collect();
    assert_eq!(names, ["git-workflow", "pdf-processing"], "{list}");
    let pdf = &skills[1];
    assert_eq!(pdf["uri"], "skill://pdf-processing/SKILL.md");
    assert_eq!(
        pdf["frontmatter"],
        json!({"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents",
               "license": "Apache-2.0", "metadata": {"version": "2.1", "tags": ["pdf", "forms"]}})
    );
    // Complete, SKILL.md first; no hidden or gitignored file.
    assert_eq!(
        uris(pdf),
        [
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md",
            "skill://pdf-processing/scripts/extract.py",
        ]
    );
    assert_eq!(pdf["resources"][0]["digest"], sha(SKILL.as_bytes()));
    assert_eq!(pdf["resources"][0]["size"], SKILL.len());
    assert_eq!(pdf["resources"][1]["digest"], sha(b"# Forms\n"));

    // skills/get: the same entry; an unknown skill is -32602 naming it.
    let got = s.ok(
        "skills/get",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    );
    assert_eq!(&got["skill"], pdf);
    let e = s.err("skills/get", json!({"uri": "skill://misnamed/SKILL.md"}));
    assert_eq!(e["code"], -32602);
    assert_eq!(
        e["message"],
        "No skill is served at `skill://misnamed/SKILL.md`"
    );
    assert_eq!(s.err("skills/get", json!({}))["code"], -32602);

    // Clients without the extension: ordinary resources.
    let (resources, _) = list_all(&mut s, "resources/list", "resources");
    let listed: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    assert!(
        listed.contains(&"skill://pdf-processing/references/FORMS.md"),
        "{listed:?}"
    );
    assert!(
        !listed.iter().any(|u| u.contains(".env")
            || u.contains("build/")
            || u.contains("README")
            || u.contains("misnamed")),
        "{listed:?}"
    );
    let md = resources
        .iter()
        .find(|r| r["uri"] == "skill://pdf-processing/SKILL.md")
        .expect("SKILL.md listed");
    assert_eq!(md["name"], "pdf-processing");
    assert_eq!(md["mimeType"], "text/markdown");
    assert_eq!(
        md["description"],
        "Extract, fill, and assemble PDF documents"
    );
    let read = s.ok(
        "resources/read",
        json!({"uri": "skill://pdf-processing/SKILL.md"}),
    );
    assert_eq!(read["contents"][0]["text"], SKILL);
    assert_eq!(
        read["contents"][0]["uri"],
        "skill://pdf-processing/SKILL.md"
    );
    for hidden in [
        "skill://pdf-processing/.env",
        "skill://pdf-processing/build/out.bin",
        "skill://misnamed/SKILL.md",
        "skill://pdf-processing/../README.md",
        "skill://README.md",
    ] {
        assert_eq!(
            s.err("resources/read", json!({"uri": hidden}))["code"],
            -32002,
            "{hidden}"
        );
    }
    let tool = s.ok(
        "tools/call",
        json!({"name": "read_resource", "arguments": {"uri": "skill://git-workflow/SKILL.md"}}),
    );
    assert!(tool.to_string().contains("Use topic branches."), "{tool}");
}

#[test]
fn the_stateless_era_and_paging() {
    let f = fixture();
    f.manifest("[server]\npage_size = 1\n\n[skills.team]\nroot = \".agents/skills\"\n");
    let mut s = Server::in_process(&f.path("mcp-server.toml"));
    let first = s.modern("skills/list", json!({}));
    let result = &first["result"];
    assert_eq!(result["resultType"], "complete", "{first}");
    assert_eq!(
        result["skills"].as_array().map(Vec::len),
        Some(1),
        "{first}"
    );
    assert!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object(),
        "{first}"
    );
    let cursor = result["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = s.modern("skills/list", json!({"cursor": cursor}));
    assert_eq!(
        second["result"]["skills"][0]["frontmatter"]["name"],
        "pdf-processing"
    );
    assert!(second["result"].get("nextCursor").is_none(), "{second}");
    let got = s.modern(
        "skills/get",
        json!({"uri": "skill://git-workflow/SKILL.md"}),
    );
    assert_eq!(
        got["result"]["skill"]["frontmatter"]["name"],
        "git-workflow"
    );
}

#[test]
fn a_changed_skill_sends_list_changed_and_new_digests() {
    let f = fixture();
    let mut s = f.serve().started();
    // Answered once the watcher watches the skills folder.
    s.ok(
        "resources/subscribe",
        json!({"uri": "skill://git-workflow/SKILL.md"}),
    );
    let before = s.ok(
        "skills/get",
        json!({"uri": "skill://git-workflow/SKILL.md"}),
    );
    let edited = "---\nname: git-workflow\ndescription: Rebase, then merge\n---\n";
    f.write(".agents/skills/git-workflow/SKILL.md", edited);
    s.wait_for(|v| v["method"] == "notifications/resources/list_changed");
    let after = s.ok(
        "skills/get",
        json!({"uri": "skill://git-workflow/SKILL.md"}),
    );
    assert_ne!(before, after);
    assert_eq!(
        after["skill"]["resources"][0]["digest"],
        sha(edited.as_bytes())
    );
    assert_eq!(
        after["skill"]["frontmatter"]["description"],
        "Rebase, then merge"
    );
    // A new skill folder.
    f.write(
        ".agents/skills/release/SKILL.md",
        "---\nname: release\ndescription: Cut a release\n---\n",
    );
    s.wait_for(|v| v["method"] == "notifications/resources/list_changed");
    let list = s.ok("skills/list", json!({}));
    assert_eq!(list["skills"].as_array().map(Vec::len), Some(3), "{list}");
}

#[test]
fn check_warns_about_the_skills_left_out() {
    let f = fixture();
    // anthropics/skills' claude-api has a 1068-character description: the warning says so.
    f.write(
        ".agents/skills/long/SKILL.md",
        format!("---\nname: long\ndescription: {}\n---\n", "é".repeat(1025)),
    );
    let out = f.run(&["check", "mcp-server.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: [skills.team] `misnamed/SKILL.md` is left out: its `name` `other` is not its folder's name `misnamed`"),
        "{err}"
    );
    assert!(
        err.contains("warning: [skills.team] `bare/SKILL.md` is left out: it does not begin with YAML front matter"),
        "{err}"
    );
    assert!(
        err.contains("warning: [skills.team] `long/SKILL.md` is left out: its `description` must be 1 to 1024 characters, found 1025"),
        "{err}"
    );
    // `serve`'s first line names the skills sources it serves.
    let mut child = std::process::Command::new(crate::support::BIN)
        .args(["serve", "--http", "127.0.0.1:0", "mcp-server.toml"])
        .current_dir(f.root())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("serve --http");
    let serving = std::io::BufRead::lines(std::io::BufReader::new(
        child.stderr.take().expect("stderr"),
    ))
    .map_while(Result::ok)
    .find(|l| l.contains("serving"));
    let _ = child.kill();
    let _ = child.wait();
    let serving = serving.expect("a `serving` line");
    assert!(
        serving.contains("0 templates, 1 skills, 0 tools"),
        "{serving}"
    );
    let bad = f.diagnose("[skills.x]\nroot = \"missing\"\n");
    assert_eq!(bad.len(), 1);
    assert!(
        bad[0].starts_with("bad.toml:2:8: [skills.x] root `"),
        "{bad:?}"
    );
}

#[test]
fn no_extension_without_skills() {
    let f = Fixture::new();
    f.write("docs/a.md", "a");
    f.manifest("[files.docs]\nroot = \"docs\"\n");
    let mut s = f.serve();
    let init = s.initialize("2025-11-25");
    assert!(init["capabilities"].get("extensions").is_none(), "{init}");
    assert_eq!(s.err("skills/list", json!({}))["code"], -32601);
}

/// A manifest of skills alone serves something (no "serves nothing" warning), is counted among
/// the sources, and its groups' patterns are checked like any manifest's.
#[test]
fn a_manifest_of_skills_alone_is_checked_whole() {
    let f = fixture();
    f.manifest("[skills.team]\nroot = \".agents/skills\"\n");
    let out = f.run(&["check", "mcp-server.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("serves nothing"), "{err}");
    assert!(text.contains("sources    1 ("), "{text}");
    assert!(text.contains(", 1 skills)"), "{text}");
    let bad = f.diagnose(
        "[skills.team]\nroot = \".agents/skills\"\n\n[groups.g]\ntools = [\"nomatch_zz\"]\n",
    );
    assert!(
        bad.iter()
            .any(|l| l.starts_with("bad.toml:5:10: ") && l.contains("`nomatch_zz` matches no tool")),
        "{bad:?}"
    );
}
