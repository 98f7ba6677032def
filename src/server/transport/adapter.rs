//! The rmcp adapter: [`LineTransport`] is the `Transport` rmcp drives. `receive` takes what the
//! scheduler lets go (with a `Ticket` in each request's extensions, for `reserve`); `send`
//! routes what rmcp sends: an answer gets the client's id back, exactly as written, and joins
//! the output queue (releasing its work slot once written); a notification waits while the
//! client does not read; an answer to a request rmcp no longer knows (cancelled) is dropped.
//! It also sees the session start (the answer to `initialize`).

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::model::{
    GetExtensions, GetMeta, JsonRpcMessage, NumberOrString, ProtocolVersion, ServerResult,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde::Serialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::OUTPUT_CAP;
use super::parse::{Class, ClientId, error_line};
use super::reader;
use super::session::{Session, Ticket};
use super::size::{serialized_aside, size_hint};
use super::state::{Lifecycle, Out, RecState};
use super::sys::Watch;
use super::writer::Output;

/// The transport rmcp drives.
pub struct LineTransport {
    pub(super) session: Arc<Session>,
}

impl LineTransport {
    /// Starts the reader thread on `read`; answers go to `output`. `eof` is cancelled when the
    /// input ends. `watch` (the same input, `sys::Watch`) lets the reader see the client's next
    /// line coming without sleeping (`reader::Spin`).
    pub fn new<R: Read + Send + 'static>(
        read: R,
        watch: Option<Watch>,
        output: &Output,
        eof: CancellationToken,
    ) -> LineTransport {
        let session = output.session.clone();
        reader::start(session.clone(), read, watch, eof);
        LineTransport { session }
    }
}

impl Drop for LineTransport {
    fn drop(&mut self) {
        self.session.lock().closed = true;
        self.session.room.notify_all();
    }
}

/// Where an outgoing message goes, decided when rmcp sends it.
pub(super) enum Route {
    /// The answer to request `internal`, to be written with the client's id.
    Answer {
        internal: u64,
        id: ClientId,
        listen: bool,
    },
    /// The answer to a cancelled request: not written.
    Drop,
    /// A notification (on a listen stream: that stream's client id).
    Notification(Option<(u64, ClientId)>),
    /// Anything else, as it is.
    AsIs,
}

impl rmcp::transport::Transport<RoleServer> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let route = route(&self.session, &item);
        deliver(self.session.clone(), item, route)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // Cancellation-safe: a message is taken from the queue only when it is returned.
        loop {
            let ready = self.session.ready.notified();
            {
                let mut st = self.session.lock();
                let picked = st.pick();
                if !st.out.is_empty() {
                    // `pick` may have answered (a listen over the cap).
                    st.wake_writer(&self.session.writable);
                }
                if let Some((mut msg, internal)) = picked {
                    if st.reader_waiting {
                        self.session.room.notify_all();
                    }
                    drop(st);
                    if let (JsonRpcMessage::Request(r), Some(id)) = (&mut *msg, internal) {
                        r.request.extensions_mut().insert(Ticket {
                            session: self.session.clone(),
                            id,
                        });
                    }
                    return Some(*msg);
                }
                // The end, once nothing read waits and what the reader started is answered.
                if st.eof && st.work.is_empty() && st.control.is_empty() && st.direct_running == 0 {
                    return None;
                }
            }
            ready.await;
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Where `item` goes (see [`Route`]); sees the session start.
pub(super) fn route(session: &Session, item: &TxJsonRpcMessage<RoleServer>) -> Route {
    let answered = match item {
        JsonRpcMessage::Response(r) => Some((&r.id, true)),
        JsonRpcMessage::Error(e) => e.id.as_ref().map(|id| (id, false)),
        JsonRpcMessage::Notification(n) => {
            let listen = match n.notification.get_meta().subscription_id() {
                Some(NumberOrString::Number(k)) => u64::try_from(k).ok().and_then(|k| {
                    let st = session.lock();
                    Some((k, st.records.get(&k)?.id.clone()))
                }),
                _ => None,
            };
            return Route::Notification(listen);
        }
        JsonRpcMessage::Request(_) => None,
    };
    let Some((NumberOrString::Number(n), is_result)) = answered else {
        return Route::AsIs;
    };
    let Ok(internal) = u64::try_from(*n) else {
        return Route::AsIs;
    };
    let mut st = session.lock();
    if !st.records.contains_key(&internal) {
        // Not a request we handed over (rmcp dropped the answer of a cancelled one): never
        // written with an id the client did not choose.
        tracing::debug!("dropped an answer for an unknown request {internal}");
        return Route::Drop;
    }
    if let Lifecycle::Before {
        pending: Some((pending, init)),
    } = st.lifecycle
        && pending == internal
    {
        st.lifecycle = if init && is_result {
            // The reader answers requests itself only in a session of a version before
            // 2026-07-28 (whose answers rmcp shapes differently: `resultType`, error codes).
            st.initialized = matches!(
                item,
                JsonRpcMessage::Response(r) if matches!(
                    &r.result,
                    ServerResult::InitializeResult(i)
                        if i.protocol_version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
                )
            );
            Lifecycle::Started
        } else {
            Lifecycle::Before { pending: None }
        };
    }
    match st.records.get_mut(&internal) {
        None => Route::Drop,
        Some(r) if r.state == RecState::Cancelled => {
            st.records.remove(&internal);
            Route::Drop
        }
        Some(r) => {
            r.state = RecState::Answered;
            Route::Answer {
                internal,
                id: r.id.clone(),
                listen: r.class == Class::Listen,
            }
        }
    }
}

/// Serializes `item` and queues it where `route` says.
pub(super) async fn deliver(
    session: Arc<Session>,
    item: TxJsonRpcMessage<RoleServer>,
    route: Route,
) -> std::io::Result<()> {
    match route {
        Route::Drop => {}
        Route::Answer {
            internal,
            id,
            listen,
        } => {
            // The runtime has one thread, which routes every message: a large answer is
            // serialized on the blocking pool.
            let mut bytes = if serialized_aside(&item) {
                let moved = id.clone();
                tokio::task::spawn_blocking(move || serialize_answer(&item, &moved))
                    .await
                    .unwrap_or_else(|e| {
                        error_line(&id, -32603, &format!("Internal error: {e}")).into_bytes()
                    })
            } else {
                serialize_answer(&item, &id)
            };
            if listen {
                splice_subscription_id(&mut bytes, internal, &id);
            }
            let mut st = session.lock();
            let queued = st.answered(internal, bytes, &session.writable);
            if st.initialized {
                session.direct_ok.store(true, Ordering::Relaxed);
            }
            // A batch's request frees its slot here.
            session.wake(&st);
            if queued {
                st.wake_writer(&session.writable);
            }
        }
        Route::Notification(listen) => {
            // Notifications wait while the client does not read (answers never do: they exist
            // already).
            loop {
                let room = session.out_room.notified();
                {
                    let st = session.lock();
                    if st.out_bytes < OUTPUT_CAP || st.out_closed || st.finishing {
                        break;
                    }
                }
                room.await;
            }
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            if let Some((internal, id)) = listen {
                splice_subscription_id(&mut bytes, internal, &id);
            }
            bytes.push(b'\n');
            let mut st = session.lock();
            st.enqueue(Out {
                bytes,
                shared: None,
                release: None,
            });
            st.wake_writer(&session.writable);
        }
        Route::AsIs => {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut st = session.lock();
            st.enqueue(Out {
                bytes,
                shared: None,
                release: None,
            });
            st.wake_writer(&session.writable);
        }
    }
    Ok(())
}

/// An answer with the client's id, written as the client wrote it.
#[derive(Serialize)]
struct Answer<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a rmcp::model::ErrorData>,
}

/// The answer `item` (a response or an error) as the JSON of one line, with the client's id.
pub(super) fn serialize_answer(item: &TxJsonRpcMessage<RoleServer>, id: &ClientId) -> Vec<u8> {
    let raw = RawValue::from_string(id.raw.to_string());
    let written = raw.as_deref().map_err(|e| e.to_string()).and_then(|raw| {
        let answer = match item {
            JsonRpcMessage::Response(r) => Answer {
                jsonrpc: "2.0",
                id: raw,
                result: Some(&r.result),
                error: None,
            },
            JsonRpcMessage::Error(e) => Answer {
                jsonrpc: "2.0",
                id: raw,
                result: None,
                error: Some(&e.error),
            },
            _ => return Err("not an answer".to_owned()),
        };
        let mut out = Vec::with_capacity(size_hint(item));
        serde_json::to_writer(&mut out, &answer).map_err(|e| e.to_string())?;
        Ok(out)
    });
    written.unwrap_or_else(|e| {
        tracing::error!("an answer could not be serialized: {e}");
        error_line(id, -32603, &format!("Internal error: {e}")).into_bytes()
    })
}

/// Puts the client's id of a listen stream where rmcp wrote our internal one
/// (`_meta["io.modelcontextprotocol/subscriptionId"]`). The key cannot occur inside a JSON
/// string: there every `"` is escaped.
fn splice_subscription_id(bytes: &mut Vec<u8>, internal: u64, id: &ClientId) {
    let pattern = format!("\"io.modelcontextprotocol/subscriptionId\":{internal}");
    let Some(at) = bytes
        .windows(pattern.len())
        .position(|w| w == pattern.as_bytes())
    else {
        return;
    };
    let end = at + pattern.len();
    if bytes.get(end).is_some_and(u8::is_ascii_digit) {
        return;
    }
    let start = end - internal.to_string().len();
    bytes.splice(start..end, id.raw.bytes());
}
