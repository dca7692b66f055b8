//! The `tracing` side: a [`tracing_subscriber::Layer`] that sends every event to [`Vlog`].
//!
//! Levels map ERROR -> err, WARN -> warn, INFO -> info, DEBUG and TRACE -> dbg; an ERROR
//! event with the field `emer = true` is logged at emer. The message is the event's
//! `message` followed by its other fields as ` name=value`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, RwLock};

use tracing::callsite::Identifier;

use tracing::field::{Field, Visit};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

use super::level::Level;
use super::modules::module_for_target;
use super::state::Vlog;

/// Routes tracing events into vlog.
#[derive(Clone, Debug)]
pub struct VlogLayer {
    vlog: Vlog,
    /// Module of each callsite, worked out once when tracing registers it.
    modules: Arc<RwLock<HashMap<Identifier, usize>>>,
}

impl VlogLayer {
    pub fn new(vlog: Vlog) -> VlogLayer {
        VlogLayer {
            vlog,
            modules: Arc::default(),
        }
    }

    fn module(&self, metadata: &Metadata<'_>) -> usize {
        let cached = self
            .modules
            .read()
            .ok()
            .and_then(|modules| modules.get(&metadata.callsite()).copied());
        cached.unwrap_or_else(|| module_for_target(metadata.target()))
    }
}

fn vlog_level(level: tracing::Level) -> Level {
    match level {
        tracing::Level::ERROR => Level::Err,
        tracing::Level::WARN => Level::Warn,
        tracing::Level::INFO => Level::Info,
        _ => Level::Dbg,
    }
}

#[derive(Default)]
struct MessageVisitor {
    message: String,
    fields: String,
    emer: bool,
}

impl Visit for MessageVisitor {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "emer" {
            self.emer = value;
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={}", field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={:?}", field.name(), value);
        }
    }
}

impl<S: Subscriber> Layer<S> for VlogLayer {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if let Ok(mut modules) = self.modules.write() {
            modules.insert(metadata.callsite(), module_for_target(metadata.target()));
        }
        // Levels change at run time (`vlog/set`), so tracing must ask `enabled` every time
        // instead of caching today's answer for the callsite.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        if metadata.is_span() {
            // Spans carry nothing vlog prints; not creating them saves their cost.
            return false;
        }
        let module = self.module(metadata);
        let level = vlog_level(*metadata.level());
        // An ERROR event may be an emer one, which more restrictive settings still show.
        let least = if level == Level::Err {
            Level::Emer
        } else {
            level
        };
        self.vlog.enabled(module, least)
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let mut visitor = MessageVisitor::default();
        event.record(&mut visitor);
        let mut level = vlog_level(*metadata.level());
        if visitor.emer && level == Level::Err {
            level = Level::Emer;
        }
        let module = self.module(metadata);
        visitor.message.push_str(&visitor.fields);
        self.vlog.log(module, level, &visitor.message);
    }
}
