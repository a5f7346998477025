//! Telling a tar stream from anything else before the tar reader sees it:
//! the tar crate's errors about a block that is no header quote the
//! block's bytes (`numeric field was not a number: … when getting cksum
//! for …`), which for a file that is not an archive at all are garbage on
//! the user's terminal.

use std::io::{self, Read};

use super::error::ImageError;

/// What a stream whose first block is no tar header is refused as.
pub const NOT_TAR: &str = "not a tar archive (plain, gzip or zstd)";

/// The size of a tar block.
const BLOCK: usize = 512;

/// The checksum field of a header.
const CHKSUM: std::ops::Range<usize> = 148..156;

/// Reads the first block of `reader` and refuses the stream, with
/// [`NOT_TAR`], unless it is empty, a zero block (an empty archive) or a
/// header whose checksum holds. Returns a reader of the whole stream.
pub fn checked(mut reader: impl Read) -> Result<impl Read, ImageError> {
    let mut head = Vec::with_capacity(BLOCK);
    (&mut reader)
        .take(BLOCK as u64)
        .read_to_end(&mut head)
        .map_err(|e| ImageError::archive(format!("reading tar: {}", printable(&e))))?;
    if !head.is_empty() && !is_header_or_end(&head) {
        return Err(ImageError::archive(NOT_TAR));
    }
    Ok(io::Cursor::new(head).chain(reader))
}

/// Whether `block` is a whole tar header block with a valid checksum, or
/// the zero block that ends an archive.
fn is_header_or_end(block: &[u8]) -> bool {
    if block.len() != BLOCK {
        return false;
    }
    if block.iter().all(|b| *b == 0) {
        return true;
    }
    let field = &block[CHKSUM];
    let digits = field
        .iter()
        .copied()
        .skip_while(|b| *b == b' ')
        .take_while(|b| b.is_ascii_digit())
        .collect::<Vec<u8>>();
    let Some(stored) = std::str::from_utf8(&digits)
        .ok()
        .and_then(|d| u32::from_str_radix(d, 8).ok())
    else {
        return false;
    };
    let byte = |(i, b): (usize, &u8)| if CHKSUM.contains(&i) { b' ' } else { *b };
    let unsigned: u32 = block.iter().enumerate().map(|p| u32::from(byte(p))).sum();
    // Some old writers summed the bytes as signed.
    let signed: i64 = block
        .iter()
        .enumerate()
        .map(|p| i64::from(byte(p) as i8))
        .sum();
    stored == unsigned || i64::from(stored) == signed
}

/// `e`'s message with every control character and every byte that was not
/// UTF-8 shown as `?`, and at most 200 characters: a tar error can quote
/// the archive's bytes.
pub fn printable(e: &impl std::fmt::Display) -> String {
    const MAX: usize = 200;
    let text = e.to_string();
    let mut out: String = text
        .chars()
        .take(MAX)
        .map(|c| {
            if c.is_control() || c == char::REPLACEMENT_CHARACTER {
                '?'
            } else {
                c
            }
        })
        .collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of_one_file() -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(2);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, "a.txt", &b"hi"[..])
            .unwrap();
        builder.into_inner().unwrap()
    }

    #[test]
    fn a_stream_that_is_not_tar_is_refused_before_the_tar_reader_quotes_it() {
        let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
        elf.resize(4096, 0xfe);
        let text = (1..2000).map(|n| format!("{n}\n")).collect::<String>();
        for (what, bytes) in [
            ("an ELF file", elf),
            ("a text file", text.into_bytes()),
            ("a short file", b"hello\n".to_vec()),
        ] {
            let e = checked(&bytes[..]).err().expect(what);
            assert_eq!(
                e.to_string(),
                format!("invalid image archive: {NOT_TAR}"),
                "{what}"
            );
        }
    }

    #[test]
    fn a_tar_stream_an_empty_archive_and_nothing_pass_whole() {
        let tar = tar_of_one_file();
        for (what, bytes) in [
            ("a tar", tar),
            ("an empty archive", vec![0; 1024]),
            ("an empty stream", Vec::new()),
        ] {
            let mut back = Vec::new();
            checked(&bytes[..])
                .unwrap_or_else(|e| panic!("{what}: {e}"))
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, bytes, "{what}: every byte is read on");
        }
    }

    #[test]
    fn printable_hides_control_and_invalid_bytes_and_caps_the_length() {
        let garbled = String::from_utf8_lossy(b"cksum for \x7fELF\x02\xff\xfe");
        assert_eq!(printable(&garbled), "cksum for ?ELF???");
        let long = "x".repeat(300);
        assert_eq!(printable(&long).chars().count(), 201);
    }
}
