//! How large an answer is before it is serialized: whether it is serialized on the routing
//! thread or on the blocking pool (the runtime has one thread, which routes every message, so
//! a large answer is not serialized there), and how much room its JSON is given up front.

use rmcp::model::{JsonRpcMessage, ServerResult};
use rmcp::service::{RoleServer, TxJsonRpcMessage};

/// Whether `item` (an answer) is large enough to be serialized on the blocking pool: a read
/// or a tool result of more than [`INLINE_SERIALIZE`] bytes, or a prompt (which may embed
/// resources).
pub(super) fn serialized_aside(item: &TxJsonRpcMessage<RoleServer>) -> bool {
    let JsonRpcMessage::Response(r) = item else {
        return false;
    };
    match &r.result {
        ServerResult::ReadResourceResult(read) => {
            read.contents
                .iter()
                .fold(0usize, |n, c| n.saturating_add(contents_len(c)))
                > INLINE_SERIALIZE
        }
        ServerResult::CallToolResult(call) => tool_result_len(call) > INLINE_SERIALIZE,
        ServerResult::GetPromptResult(_) => true,
        _ => false,
    }
}

/// A read answer whose contents are at most this many bytes is serialized in place: that
/// takes a few microseconds, less than the hand-off to the blocking pool and back.
pub(super) const INLINE_SERIALIZE: usize = 16 * 1024;

/// The bytes of text or base64 one read content holds.
pub(super) fn contents_len(c: &rmcp::model::ResourceContents) -> usize {
    match c {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.len(),
        rmcp::model::ResourceContents::BlobResourceContents { blob, .. } => blob.len(),
        // A kind rmcp may add: serialized on the blocking pool, to be safe.
        _ => usize::MAX / 2,
    }
}

/// About how many bytes a tool's result serializes to, as far as it matters: text contents and
/// structured content are counted (the latter up to `INLINE_SERIALIZE`); any other kind of
/// content, or `_meta`, counts as large, so it is serialized on the blocking pool.
pub(super) fn tool_result_len(call: &rmcp::model::CallToolResult) -> usize {
    const LARGE: usize = usize::MAX / 2;
    if call.meta.is_some() {
        return LARGE;
    }
    let mut len = 0usize;
    for block in &call.content {
        match block {
            rmcp::model::ContentBlock::Text(t) if t.meta.is_none() && t.annotations.is_none() => {
                len = len.saturating_add(t.text.len());
            }
            _ => return LARGE,
        }
    }
    if let Some(value) = &call.structured_content {
        len = len.saturating_add(json_len_upto(value, INLINE_SERIALIZE + 1));
    }
    len
}

/// The bytes `value`'s strings and numbers hold (a lower bound of its JSON's length), counting
/// no further than `limit`: a huge value is not walked to its end.
fn json_len_upto(value: &serde_json::Value, limit: usize) -> usize {
    use serde_json::Value;
    let mut len = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        if len >= limit {
            return limit;
        }
        let own = match v {
            Value::Null | Value::Bool(_) | Value::Number(_) => 8,
            Value::String(s) => s.len() + 2,
            // Each item is at least a byte: a long array or map is as long as the limit.
            Value::Array(items) if items.len() >= limit => return limit,
            Value::Object(map) if map.len() >= limit => return limit,
            Value::Array(items) => {
                stack.extend(items);
                2 + items.len()
            }
            Value::Object(map) => {
                stack.extend(map.values());
                map.keys()
                    .fold(2usize, |n, k| n.saturating_add(k.len() + 4))
            }
        };
        len = len.saturating_add(own);
    }
    len.min(limit)
}

/// About how long an answer's JSON is, so that a large one is not grown (and copied) a dozen
/// times on its way: a page of resources, or a read's contents.
pub(super) fn size_hint(item: &TxJsonRpcMessage<RoleServer>) -> usize {
    const SMALL: usize = 256;
    let JsonRpcMessage::Response(r) = item else {
        return SMALL;
    };
    match &r.result {
        ServerResult::ListResourcesResult(l) => l.resources.iter().fold(SMALL, |n, r| {
            n + 96
                + r.uri.len()
                + r.name.len()
                + r.description.as_ref().map_or(0, String::len)
                + r.mime_type.as_ref().map_or(0, String::len)
        }),
        ServerResult::ReadResourceResult(read) => read.contents.iter().fold(SMALL, |n, c| {
            n.saturating_add(contents_len(c).min(1 << 24) + 128)
        }),
        _ => SMALL,
    }
}
