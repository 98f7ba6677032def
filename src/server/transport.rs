//! Newline-delimited JSON-RPC over byte streams (stdin/stdout), under rmcp's `Transport`, with
//! memory bounded by design whatever the client does.
//!
//! Written here rather than taken from rmcp because the protocol needs more than framing:
//! `-32700`/`-32600` for lines that are not messages, ids echoed exactly as written (integers
//! of any size), JSON-RPC batches answered as one array line, notifications that never end the
//! session, and backpressure instead of buffering.
//!
//! # Files, one job each
//!
//! - `reader.rs`: the reader thread. Splits stdin into lines (at most [`MAX_LINE`]; a longer
//!   one is answered with `-32600` and skipped), reads one more only when there is room, takes
//!   each line (`parse.rs` makes it a message: ids checked and replaced, errors answered).
//! - `state.rs`: the scheduler. Queues by class, work slots, reserved bytes, batches, the
//!   output queue; what rmcp may take next (`State::pick`).
//! - `adapter.rs`: [`LineTransport`], what rmcp drives: `receive` takes from the scheduler,
//!   `send` puts the client's id back on each answer and queues it.
//! - `writer.rs`: [`Output`], the writer thread, which writes stdout.
//! - `size.rs`: how large an answer is before it is serialized (and where it is serialized).
//! - `direct.rs`: the one shortcut past rmcp (the reader answers a bare `ping`, small reads and
//!   cached list pages itself), with the figures it buys.
//! - `session.rs`: what the threads share (the state's lock, their wake-ups) and [`reserve`].
//! - `sys.rs`: the one platform seam (the reader's watch of its input; how a stdio server is
//!   told to stop).
//!
//! # Ids
//!
//! rmcp never sees a client's id: each request gets an internal number, and its answer is
//! written with the client's id as the client wrote it (`parse::ClientId`). So an id beyond 64
//! bits comes back intact, two requests with the same id in flight are two requests (each
//! answered, each holding its own slot), and `notifications/cancelled` is matched by value and
//! reaches every request in flight with that id.
//!
//! # Bounds
//!
//! Requests are sorted into three classes:
//! - *control* (`initialize`, `ping`, `server/discover`, `logging/setLevel`,
//!   `resources/(un)subscribe`), notifications and the client's responses: never wait for a
//!   work slot, so a cancellation or a ping is handled however busy the server is (at most
//!   [`MAX_CONTROL`] control requests unwritten);
//! - *listen* (`subscriptions/listen`): a stream that stays open; it holds no work slot (at most
//!   [`MAX_LISTENS`] open);
//! - *work*: everything else. At most [`MAX_WORK`] are handed to rmcp (or run by the reader,
//!   `direct.rs`) at once, whatever their ids, and a slot is freed when the answer is
//!   *written* (or the request is cancelled), not when it is produced.
//!
//! Memory is bounded at every stage:
//! - input waiting for rmcp: at most [`INPUT_CAP`] bytes (a message costs its line plus 1 KiB);
//!   beyond that the reader stops reading stdin: the client waits on the pipe;
//! - output: when more than [`OUTPUT_CAP`] bytes wait for stdout (the client does not read),
//!   the reader stops reading stdin, no work request is handed to rmcp, and notifications wait
//!   (backpressure, not buffering). Control answers already taken still go out, which is
//!   bounded by the input cap. Once the client reads, everything resumes;
//! - answers being computed: a byte budget ([`BUDGET`]) shared by the session. A request that
//!   may produce a large answer (a read, a tool call) calls [`reserve`] before it starts; the
//!   reservation waits (in order) while reserved bytes plus bytes waiting for stdout exceed the
//!   budget. When the answer is serialized its reservation becomes its exact size, and that is
//!   released when the writer thread has written it;
//! - a batch's answers wait until the whole batch is done: at most [`BATCH_ANSWER_CAP`] bytes
//!   per batch (a member whose answer does not fit gets an error instead) and
//!   [`MAX_OPEN_BATCHES`] batches under way.
//!
//! Answers are serialized by the send future (a large one on the blocking pool), so every byte
//! waiting for stdout is counted exactly. The thread that routes requests never writes stdout
//! (the writer thread does, and the reader its own answers while the writer sleeps), so a
//! client that does not read never blocks it, on any platform.
//!
//! # Session start
//!
//! Before the session starts (rmcp waits for `initialize` or a first 2026-07-28 request and
//! ends the session on anything else), notifications and responses are dropped here: a
//! notification never ends the process. The transport sees the start: the answer to
//! `initialize` was a result, or a request was handed over and rmcp asked for the next message
//! without answering it (rmcp then runs it inside the session).

mod adapter;
mod direct;
mod parse;
mod reader;
mod session;
mod size;
mod state;
mod sys;
mod writer;

pub use adapter::LineTransport;
pub use direct::hook;
pub use session::{reserve, reserve_total};
pub use sys::{Watch, terminated};
pub use writer::Output;

pub(super) const MIB: usize = 1024 * 1024;

/// The largest incoming line (one JSON-RPC message or batch); a longer one gets `-32600`.
pub const MAX_LINE: usize = 16 * MIB;
/// Input parsed and waiting for rmcp, at most (each message counts its line + 1 KiB). This is
/// how far the reader looks ahead for a cancellation or a `ping` behind a flood of work: ~3 700
/// short requests (tried: 1 MiB saved ~2.5 MiB of peak RSS under 10 000 pipelined SQL queries,
/// but a `ping` behind 3 000 pipelined 1 MiB reads then waited for 2 000 of their answers).
pub const INPUT_CAP: usize = 4 * MIB;
/// What one queued message costs beyond its text (its parsed form).
pub(super) const MESSAGE_COST: usize = 1024;
/// Bytes waiting for stdout beyond which nothing more is read or started.
pub const OUTPUT_CAP: usize = 8 * MIB;
/// Bytes reserved by answers being computed plus bytes waiting for stdout, at most. With the
/// process's own ~10 MiB this keeps a server under 64 MiB whatever the load (a debug build
/// maps ~27 MiB of itself); a release build under 32 MiB for pipelined 64 KiB and 1 MiB reads
/// (which map 12–15 MiB of the binary: the kernel maps a whole cached folio on a fault).
pub const BUDGET: usize = 12 * MIB;
/// Work requests handed to rmcp whose answers are not written yet, at most. Each is a task of
/// ~10 KB in rmcp plus what its handler holds; 64 keep two cores and the blocking pool busy
/// (256 gave no more throughput and 2.6 MB more heap under pipelined SQL queries).
pub const MAX_WORK: usize = 64;
/// Control requests handed to rmcp whose answers are not written yet, at most.
pub const MAX_CONTROL: usize = 1024;
/// Open `subscriptions/listen` streams, at most.
pub const MAX_LISTENS: usize = 1024;
/// The largest answer line of a batch.
pub const BATCH_ANSWER_CAP: usize = 16 * MIB;
/// Batches with requests under way, at most.
pub const MAX_OPEN_BATCHES: usize = 2;
/// What a `resources/read` (or a prompt embedding resources) reserves before it reads: a
/// 1 MiB binary file is 1 MiB read, 1.33 MiB of base64 and as much serialized.
pub const READ_RESERVE: usize = 3 * MIB;
/// What a `*/list` request reserves before it builds its page (a page of 1 000 resources, or
/// hundreds of tools with their schemas, is tens to hundreds of KiB).
pub const LIST_RESERVE: usize = MIB;
/// What a `tools/call` reserves before it runs (a tool's output is capped, 1 MiB by default,
/// and its answer's reservation becomes its size once serialized): 16 calls fit in the budget,
/// as many as tool processes run at once.
pub const TOOL_RESERVE: usize = BUDGET / 16;

#[cfg(test)]
mod tests;
