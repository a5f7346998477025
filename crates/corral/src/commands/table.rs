//! The tables the listing commands print for people: a header, then one
//! row per item, columns padded to their widest cell, two spaces apart.

/// `header` and `rows` as aligned lines, trailing spaces trimmed.
pub fn render(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut all: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    all.extend(rows);
    let mut widths = vec![0usize; header.len()];
    for r in &all {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &all {
        let line: Vec<String> = r
            .iter()
            .zip(widths.iter())
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}
