//! The checked-in author kit (`kit/` at the repository root) is exactly what
//! the code generates: a change to a type, a schema, an example or a
//! decoder's disposition fails here until the kit is regenerated.

use std::path::Path;

use corral_wire::kit;

#[test]
fn checked_in_kit_matches_the_generated_one() {
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kit");
    let differences = kit::check(&checked_in).expect("read the checked-in kit");
    let listed: Vec<String> = differences.iter().map(ToString::to_string).collect();
    assert!(
        differences.is_empty(),
        "the checked-in kit differs from the generated one ({}); run `corral kit write kit` \
         and review the diff",
        listed.join("; ")
    );
}

#[test]
fn writing_into_a_fresh_directory_then_checking_finds_no_difference_byte_for_byte() {
    let dir = std::env::temp_dir().join(format!("corral-kit-drift-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let written = kit::write(&dir).expect("write the kit");
    assert!(written.iter().any(|p| p.ends_with("frames.json")));
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kit");
    for path in &written {
        let fresh = std::fs::read(dir.join(path)).unwrap();
        let theirs = std::fs::read(checked_in.join(path)).unwrap_or_default();
        assert!(
            fresh == theirs,
            "{} differs from the generated one; run `corral kit write kit`",
            path.display()
        );
    }
    assert_eq!(kit::check(&dir).unwrap(), Vec::new());
    // A stale file and an edited file are both reported.
    std::fs::write(dir.join("vectors/stale.json"), "{}\n").unwrap();
    std::fs::write(dir.join("vectors/frames.json"), "{}\n").unwrap();
    let differences = kit::check(&dir).unwrap();
    assert_eq!(
        differences,
        vec![
            kit::Difference::Changed("vectors/frames.json".into()),
            kit::Difference::Unexpected("vectors/stale.json".into()),
        ]
    );
    // Writing again repairs both.
    kit::write(&dir).unwrap();
    assert_eq!(kit::check(&dir).unwrap(), Vec::new());
    std::fs::remove_dir_all(&dir).unwrap();
}
