//! The kit's `README.md`: the contract revision, what each file is, and how
//! to use and regenerate the kit.

use super::KitFile;
use crate::protocol::CONTRACT_REVISION;

/// The README text, listing `files`.
pub(super) fn text(files: &[KitFile]) -> String {
    let mut list = String::new();
    for f in files {
        list.push_str(&format!("- `{}`\n", f.path.display()));
    }
    format!(
        "# corral author kit

Contract revision: `{CONTRACT_REVISION}` (sent in the `corral-contract-revision`
header of every request and response; see `docs/wire.md`).

Everything here is generated from the Rust types and decoders of
`corral-contract` and `corral-wire`. Do not edit it by hand: run
`corral kit write kit` to regenerate it and `corral kit check kit` to
compare. A test (`crates/corral-wire/tests/wire/kit_drift.rs`) fails when the
checked-in kit differs from what the code generates.

## Schemas

`schemas/<Type>.json` are JSON Schemas (draft 2020-12) of the capabilities
envelope, the body of every unary route (`POST /v1/<member>`), every
result, the reply wrappers of the handoff routes (`HandoffReply_<T>`:
`{{\"value\": <T>, \"handoff\": <id>}}`) and of the active-write routes
(`TransactionReply`), the tickets that settle them (`HandoffTicket`,
`TransactionTicket`), the contract error (`SandboxError`) and the
`openProcess` control frame (`Frame`, a JSON text message tagged by
`frame`). A schema states shapes and patterns; the cross-field rules (a
read path under its `allowed_root`, an aggregate budget equal to the sum
of its members, …) are enforced by the decoders and shown in the vectors.

## Golden vectors

- `vectors/<route>.json`: one per unary route. `examples[0]` is a valid
  body; the others are variations of it. Each example's `disposition` is
  what the server's decoder answers, computed by running it:
  `{{\"outcome\": \"accepted\"}}`, or `{{\"outcome\": \"refused\", \"status\": 400,
  \"refusal\": \"malformed_body\", \"field\": …, \"message\": …}}` where
  `refusal` is the `corral-wire-refusal` header, `field` the request field
  the refusal names (`null` when it concerns the body as a whole) and
  `message` the decoder's one-line message. `result` is one valid reply
  to the valid body — `{{\"type\": <schema>, \"body\": …}}`, the body
  validating against `schemas/<schema>.json`; `type` is `null` for a route
  that replies `null`.
- `vectors/handoff_rollback.json`, `vectors/handoff_settle.json`,
  `vectors/active_write_commit.json`, `vectors/active_write_rollback.json`:
  the same for the settlement routes (`routes` lists every path the file
  covers).
- `vectors/capabilities.json`: a valid capabilities envelope and invalid
  variations, with the disposition of the envelope's decoder (the runtime
  refuses a provider whose envelope is refused).
- `vectors/frames.json`: one valid example of every control frame,
  invalid control frames, and binary `data` frames
  (`[stream: u8][offset: u64 big-endian][payload]`, shown in hex) with the
  disposition of the frame decoders.

### Field paths

`field` is a path as the request spells it: member names joined by `.`,
array indexes in brackets, from the top of the body — `expires_at`,
`profile.digest`, `mounts[0].path`, `command.timeout_seconds`,
`profile.network.destinations`. It names the member the refusal is about:
the one that is missing, unknown, malformed, or breaks a rule across
members (`files[0].path` for a read outside its `allowed_root`). The
server's `400` reply does not carry it (its body is the route's contract
error, which has no member for it); it is what the decoder found, for your
own implementation's tests. Inside a control frame the decoder cannot
always track the path, and `field` may name only the member or be `null`.

Use them as test fixtures: feed every `body` (or `frame`, or `envelope`)
to your implementation and expect the same outcome and the same field.

## Files

{list}"
    )
}
