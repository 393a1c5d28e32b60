//! A sandbox that runs a model-written JavaScript program against a small API (ADR 0013).
//!
//! [`run`] evaluates a `prelude` (the API, written by us) and then a `script` (written by the
//! model) in a fresh QuickJS runtime and context (`rquickjs`), and returns what the script
//! printed, how many API calls it made and, if it did not finish, why — one [`ErrorKind`] per
//! reason, with a message the model can act on.
//!
//! * **What the script sees.** The ECMAScript built-ins (no `performance`), `print(...)` and
//!   `console.log/info/warn/error/debug(...)`, and whatever the prelude defines. There is no
//!   filesystem, network, module loader or timer: `require`, `fetch`, `setTimeout`,
//!   `setInterval` and `setImmediate` throw an error that names them, `import(...)` rejects,
//!   `import`/`export` statements are syntax errors. Top-level `await` works (the script is
//!   evaluated as an async script and the job queue is drained), so `await api.x()` does not
//!   trip a model used to Node.
//! * **Determinism.** There is no clock: `Date.now()`, `Date()` and `new Date()` without
//!   arguments throw (a `Date` built from a value works); `Math.random` is a fixed-seed PRNG, the
//!   same sequence in every run. A script's result depends on the API's answers only.
//! * **The API.** The prelude reaches the host through `__host(op, argsJson)`, which returns the
//!   result as a JSON string or throws an `Error` carrying the host's message (catchable). After
//!   the prelude, every own property of the global object whose name starts with `__` is
//!   deleted (or, if a `var`/`function` declaration made it undeletable, set to `undefined`), so
//!   the script cannot call `__host` itself; helpers the prelude keeps private follow the same
//!   naming or live in closures. Top-level `let`/`const` names are not global-object properties
//!   and are not hidden: the prelude must not keep `__host` in one.
//! * **Limits** ([`Limits`]): wall time through QuickJS's interrupt hook, memory through its
//!   allocation limit, native stack through its stack limit, and the API calls and printed bytes
//!   counted here. A time, call or print limit stops the script for good (QuickJS's interrupt
//!   raises an uncatchable error); QuickJS's out-of-memory and stack-overflow errors are
//!   ordinary exceptions, reported as [`ErrorKind::MemoryLimit`] / [`ErrorKind::StackLimit`]
//!   when the script does not catch them.
//!
//! The engine runs on a thread of its own whose stack is sized from [`Limits::stack_bytes`], so
//! the stack limit holds whatever the caller's stack; `host` is called on the calling thread, one
//! call at a time, while the script waits. A host call's time counts toward the wall limit, but a
//! host call that never returns is not interrupted: the host bounds its own calls. QuickJS polls
//! the interrupt hook in its interpreter and at every function call, not inside every built-in:
//! the array built-ins that walk a huge `length` over holes refuse past 2^25 elements, and if
//! some other built-in still runs past the wall limit by more than a second, [`run`] returns
//! [`ErrorKind::TimeLimit`] at once and leaves the thread to stop by itself at its next check.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{Coerced, Context, Ctx, Exception, FromJs, Function, Object, Persistent, Promise, Runtime, Value};

/// What one run may use. Every limit stops the script with its own [`ErrorKind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall time of the whole run (prelude, script, its promise jobs and the host calls).
    pub wall: Duration,
    /// Bytes QuickJS may allocate, its built-ins and the setup included (about 0.2 MiB).
    pub memory_bytes: usize,
    /// Native stack QuickJS may use (it bounds recursion); clamped to 32 KiB ..= 16 MiB.
    pub stack_bytes: usize,
    /// API calls (`__host` calls): the call past this one throws and stops the script.
    pub calls: usize,
    /// Bytes of `printed`; output past it is cut and stops the script.
    pub printed_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { wall: Duration::from_secs(5), memory_bytes: 32 << 20, stack_bytes: 256 << 10, calls: 100, printed_bytes: 16 << 10 }
    }
}

/// Why a script did not finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The script does not parse (the message has the line and column).
    Syntax,
    /// The script threw (or rejected) and nothing caught it.
    Thrown,
    /// It ran longer than [`Limits::wall`].
    TimeLimit,
    /// It allocated more than [`Limits::memory_bytes`].
    MemoryLimit,
    /// It recursed past [`Limits::stack_bytes`].
    StackLimit,
    /// It made more than [`Limits::calls`] API calls.
    CallLimit,
    /// It printed more than [`Limits::printed_bytes`].
    PrintLimit,
}

/// Why a script did not finish, in words the model reads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScriptError {
    pub kind: ErrorKind,
    pub message: String,
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// What `print`/`console.*` wrote, one line per call, cut at [`Limits::printed_bytes`].
    pub printed: String,
    /// API calls that reached the host.
    pub calls: usize,
    /// `None` when the script ran to its end.
    pub error: Option<ScriptError>,
}

/// The host's answer to one API call.
type HostReply = Result<serde_json::Value, String>;

/// What the engine thread tells the calling thread.
enum FromEngine {
    /// An API call; the engine waits for the reply.
    Call(String, serde_json::Value),
    /// The run is over and the runtime is gone.
    Done(Outcome),
}

/// Runs `script` after `prelude` in a fresh runtime and context, blocking the calling thread.
///
/// `host(op, args)` serves every API call the prelude makes through the global function
/// `__host(op: string, argsJson: string): string` (it returns the JSON result as a string; an
/// `Err(message)` becomes a JS `Error` thrown at the call site, catchable by the script).
/// See the module documentation for what the script can and cannot do.
pub fn run(prelude: &str, script: &str, limits: &Limits, host: &mut dyn FnMut(&str, serde_json::Value) -> Result<serde_json::Value, String>) -> Outcome {
    run_with_grace(prelude, script, limits, host, STOP_GRACE)
}

/// [`run`], waiting `grace` past the wall limit before abandoning the engine thread.
fn run_with_grace(
    prelude: &str,
    script: &str,
    limits: &Limits,
    host: &mut dyn FnMut(&str, serde_json::Value) -> Result<serde_json::Value, String>,
    grace: Duration,
) -> Outcome {
    let limits = *limits;
    let (to_caller, from_engine) = mpsc::channel::<FromEngine>();
    let (to_engine, replies) = mpsc::channel::<HostReply>();
    let printed = Arc::new(Mutex::new(String::new()));
    let engine = {
        let (prelude, script, printed) = (prelude.to_owned(), script.to_owned(), Arc::clone(&printed));
        std::thread::Builder::new()
            .name("sandbox".into())
            .stack_size(stack_limit(&limits).saturating_add(ENGINE_STACK_MARGIN))
            .spawn(move || {
                let bridge = Rc::new(Bridge { to_caller, replies });
                let outcome = Engine::new(limits, printed, Rc::clone(&bridge)).run(&prelude, &script);
                let _ = bridge.to_caller.send(FromEngine::Done(outcome));
            })
            .expect("the OS refused a thread for the sandbox")
    };
    let mut deadline = Instant::now() + limits.wall + grace;
    let mut served = 0;
    loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        match from_engine.recv_timeout(wait) {
            Ok(FromEngine::Call(op, args)) => {
                served += 1;
                let reply = host(&op, args);
                // The engine checks the wall time again as soon as it has the reply.
                deadline = deadline.max(Instant::now() + grace);
                if to_engine.send(reply).is_err() {
                    deadline = Instant::now() + grace;
                }
            }
            Ok(FromEngine::Done(outcome)) => {
                let _ = engine.join();
                return outcome;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => match engine.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the engine thread ends with Done"),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Stuck in a native loop that does not poll the interrupt hook: the thread is
                // left to end on its own (it stops at its next check) and the run ends now.
                tracing::warn!(
                    "a sandboxed script overran its {:?} wall limit inside a built-in; its \
                     thread is abandoned",
                    limits.wall
                );
                return Outcome { printed: lock(&printed).clone(), calls: served, error: Some(limit_error(ErrorKind::TimeLimit, &limits, None)) };
            }
        }
    }
}

/// How long past [`Limits::wall`] the calling thread waits for the engine to stop by itself.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Stack above [`Limits::stack_bytes`] for the engine thread: QuickJS checks its limit at each
/// call and parse step, so the frames past it (its own and ours) are few and small.
const ENGINE_STACK_MARGIN: usize = 2 << 20;

fn stack_limit(limits: &Limits) -> usize {
    // 0 (and, in rquickjs, anything above 16 MiB) would switch QuickJS's check off.
    limits.stack_bytes.clamp(32 << 10, 16 << 20)
}

/// The file names QuickJS puts in stack traces; the line of an error is the script's.
const PRELUDE_FILE: &str = "prelude.js";
const SCRIPT_FILE: &str = "script.js";

/// The engine thread's way to the host.
struct Bridge {
    to_caller: mpsc::Sender<FromEngine>,
    replies: mpsc::Receiver<HostReply>,
}

/// What the engine's callbacks share.
struct State {
    limits: Limits,
    start: Instant,
    /// Shared with the calling thread, which reads it if it has to abandon the engine.
    printed: Arc<Mutex<String>>,
    calls: Cell<usize>,
    /// Set once a limit is hit; the interrupt hook then stops the script at its next check.
    stop: Cell<Option<ErrorKind>>,
    /// Rejected promises nothing handled (yet), with their reasons. Emptied before the runtime
    /// is dropped (a [`Persistent`] must not outlive it).
    unhandled: RefCell<Vec<(Persistent<Value<'static>>, Persistent<Value<'static>>)>>,
}

struct Engine {
    state: Rc<State>,
    bridge: Rc<Bridge>,
}

impl Engine {
    fn new(limits: Limits, printed: Arc<Mutex<String>>, bridge: Rc<Bridge>) -> Self {
        Engine {
            state: Rc::new(State { limits, start: Instant::now(), printed, calls: Cell::new(0), stop: Cell::new(None), unhandled: RefCell::new(Vec::new()) }),
            bridge,
        }
    }

    fn run(self, prelude: &str, script: &str) -> Outcome {
        let error = self.execute(prelude, script);
        let state = &self.state;
        // A limit hit decides the outcome even if the script caught the error and ended.
        let error = match state.stop.get() {
            Some(kind) => Some(limit_error(kind, &state.limits, None)),
            None => error,
        };
        Outcome { printed: std::mem::take(&mut *lock(&state.printed)), calls: state.calls.get(), error }
    }

    /// Runs both sources; returns the error of a run that did not end normally.
    fn execute(&self, prelude: &str, script: &str) -> Option<ScriptError> {
        let limits = &self.state.limits;
        let out_of_memory = || Some(limit_error(ErrorKind::MemoryLimit, limits, None));
        let Ok(runtime) = Runtime::new() else {
            return out_of_memory();
        };
        runtime.set_memory_limit(limits.memory_bytes.max(1));
        runtime.set_max_stack_size(stack_limit(limits));
        let state = Rc::clone(&self.state);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            if state.stop.get().is_none() && state.start.elapsed() > state.limits.wall {
                state.stop.set(Some(ErrorKind::TimeLimit));
            }
            state.stop.get().is_some()
        })));
        let state = Rc::clone(&self.state);
        runtime
            .set_host_promise_rejection_tracker(Some(Box::new(move |ctx, promise, reason, handled| track_rejection(&state, &ctx, promise, reason, handled))));
        // Everything but `performance` (a clock) and `DOMException` (unused).
        let Ok(context) = Context::custom::<(
            intrinsic::Date,
            intrinsic::Eval,
            intrinsic::RegExpCompiler,
            intrinsic::RegExp,
            intrinsic::Json,
            intrinsic::Proxy,
            intrinsic::MapSet,
            intrinsic::TypedArrays,
            intrinsic::Promise,
            intrinsic::WeakRef,
        )>(&runtime) else {
            return out_of_memory();
        };
        let error = context.with(|ctx| {
            let error = self.in_context(&ctx, prelude, script);
            // Drop the tracked promises while the runtime lives.
            self.state.unhandled.take();
            error
        });
        drop(context);
        drop(runtime);
        error
    }

    fn in_context(&self, ctx: &Ctx<'_>, prelude: &str, script: &str) -> Option<ScriptError> {
        if let Err(error) = self.install(ctx) {
            return Some(self.failure(ctx, error, Phase::Setup));
        }
        if let Err(error) = eval::<()>(ctx, prelude, PRELUDE_FILE, false) {
            return Some(self.failure(ctx, error, Phase::Prelude));
        }
        if let Err(error) = eval::<()>(ctx, HIDE_PRIVATE, "sandbox.js", false) {
            return Some(self.failure(ctx, error, Phase::Setup));
        }
        let promise: Promise = match eval(ctx, script, SCRIPT_FILE, true) {
            Ok(promise) => promise,
            Err(error) => return Some(self.failure(ctx, error, Phase::Compile)),
        };
        // Run the promise jobs: the script's own awaits, then whatever it left running.
        while self.state.stop.get().is_none() && ctx.execute_pending_job() {}
        if self.state.stop.get().is_some() {
            return None;
        }
        match promise.state() {
            PromiseState::Rejected => {
                let error = promise.result::<Value>().and_then(Result::err)?;
                return Some(self.failure(ctx, error, Phase::Run));
            }
            PromiseState::Pending => {
                return Some(ScriptError {
                    kind: ErrorKind::Thrown,
                    message: "the script awaited a promise that never settles (there are no \
                              timers or I/O here: every API call answers at once)"
                        .into(),
                });
            }
            PromiseState::Resolved => {}
        }
        let reason = self.state.unhandled.borrow().first().map(|(_, reason)| reason.clone());
        let reason = reason?.restore(ctx).ok()?;
        Some(self.failure(ctx, ctx.throw(reason), Phase::Unhandled))
    }

    /// Defines `print`, `console`, `__host` and the setup (no clock, fixed `Math.random`,
    /// named errors for what is absent).
    fn install<'js>(&self, ctx: &Ctx<'js>) -> rquickjs::Result<()> {
        let globals = ctx.globals();
        let state = Rc::clone(&self.state);
        globals.set("__print", Function::new(ctx.clone(), move |ctx: Ctx<'_>, line: String| print_line(&state, &ctx, &line))?)?;
        let state = Rc::clone(&self.state);
        let bridge = Rc::clone(&self.bridge);
        globals.set("__host_raw", Function::new(ctx.clone(), move |ctx: Ctx<'js>, op: String, args: String| host_call(&state, &bridge, &ctx, op, &args))?)?;
        eval::<()>(ctx, SETUP, "sandbox.js", false)
    }

    /// Turns an error of `phase` into what the model reads.
    fn failure(&self, ctx: &Ctx<'_>, error: rquickjs::Error, phase: Phase) -> ScriptError {
        let limits = &self.state.limits;
        if let Some(kind) = self.state.stop.get() {
            return limit_error(kind, limits, None);
        }
        let thrown = match error {
            rquickjs::Error::Exception => ctx.catch(),
            rquickjs::Error::Allocation => return limit_error(ErrorKind::MemoryLimit, limits, None),
            other => {
                return ScriptError { kind: ErrorKind::Thrown, message: format!("{}{other}", phase.prefix()) };
            }
        };
        let described = describe(&thrown);
        let kind = match &described {
            // QuickJS throws `null` when the memory left cannot even hold the error object. A
            // script's own uncaught `throw null` reads the same (see the module docs).
            Thrown::Null => ErrorKind::MemoryLimit,
            Thrown::Error { name, message, .. } => match (name.as_str(), message.as_str()) {
                ("InternalError", m) if m.starts_with("out of memory") => ErrorKind::MemoryLimit,
                ("RangeError", "Maximum call stack size exceeded") => ErrorKind::StackLimit,
                ("InternalError", "interrupted") => ErrorKind::TimeLimit,
                ("SyntaxError", _) if phase == Phase::Compile => ErrorKind::Syntax,
                _ => ErrorKind::Thrown,
            },
            Thrown::Value(_) => ErrorKind::Thrown,
        };
        let at = described.position();
        match kind {
            ErrorKind::Thrown | ErrorKind::Syntax => ScriptError { kind, message: format!("{}{}", phase.prefix(), described.text()) },
            _ => limit_error(kind, limits, at),
        }
    }
}

/// Where an error arose, for the prefix of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Setup,
    Prelude,
    Compile,
    Run,
    /// A rejected promise nothing handled.
    Unhandled,
}

impl Phase {
    fn prefix(self) -> &'static str {
        match self {
            Phase::Setup => "the sandbox could not start: ",
            Phase::Prelude => "the API's prelude failed (not the script's fault): ",
            Phase::Unhandled => "a promise was rejected and nothing handled it: ",
            Phase::Compile | Phase::Run => "",
        }
    }
}

/// A thrown value, read.
enum Thrown {
    Null,
    Error { name: String, message: String, stack: String },
    Value(String),
}

impl Thrown {
    /// (line, column) of the first frame in the script, else in the prelude.
    fn position(&self) -> Option<(u32, u32)> {
        let Thrown::Error { stack, .. } = self else {
            return None;
        };
        position_in(stack, SCRIPT_FILE).or_else(|| position_in(stack, PRELUDE_FILE))
    }

    fn text(&self) -> String {
        match self {
            Thrown::Null => "the script threw null".into(),
            Thrown::Error { name, message, stack } => {
                let head = if message.is_empty() { name.clone() } else { format!("{name}: {message}") };
                match position_in(stack, SCRIPT_FILE) {
                    Some((line, column)) => format!("{head} (line {line}, column {column})"),
                    None => match position_in(stack, PRELUDE_FILE) {
                        Some((line, column)) => {
                            format!("{head} (in the API's prelude, line {line}, column {column})")
                        }
                        None => head,
                    },
                }
            }
            Thrown::Value(text) => format!("the script threw a value that is not an Error: {text}"),
        }
    }
}

fn describe(value: &Value<'_>) -> Thrown {
    if value.is_null() {
        return Thrown::Null;
    }
    if let Some(object) = value.as_object().filter(|object| object.is_error()) {
        let get = |key: &str| object.get::<_, Option<Coerced<String>>>(key).ok().flatten().map(|text| text.0).unwrap_or_default();
        let name = Some(get("name")).filter(|name| !name.is_empty()).unwrap_or_else(|| "Error".into());
        return Thrown::Error { name, message: get("message"), stack: get("stack") };
    }
    Thrown::Value(value_text(value))
}

/// A non-Error value as JSON, else as `String(value)`.
fn value_text(value: &Value<'_>) -> String {
    let ctx = value.ctx();
    let json = ctx.json_stringify(value.clone()).ok().flatten().and_then(|text| text.to_string().ok());
    let text = json
        .or_else(|| {
            let symbol = value.as_symbol()?;
            let description = symbol.description().ok()?;
            let description = description.as_string().and_then(|text| text.to_string().ok());
            Some(format!("Symbol({})", description.unwrap_or_default()))
        })
        .or_else(|| Coerced::<String>::from_js(ctx, value.clone()).ok().map(|text| text.0));
    let mut text = text.unwrap_or_else(|| format!("({})", value.type_name()));
    truncate_at_char(&mut text, 1000);
    text
}

/// `file:line:column` in a QuickJS stack trace.
fn position_in(stack: &str, file: &str) -> Option<(u32, u32)> {
    let pattern = format!("{file}:");
    stack.lines().find_map(|frame| {
        let rest = &frame[frame.find(&pattern)? + pattern.len()..];
        let mut parts = rest.split(|c: char| !c.is_ascii_digit());
        let line = parts.next()?.parse().ok()?;
        let column = parts.next()?.parse().ok()?;
        Some((line, column))
    })
}

fn limit_error(kind: ErrorKind, limits: &Limits, at: Option<(u32, u32)>) -> ScriptError {
    let at = match at {
        Some((line, column)) => format!(" (at line {line}, column {column})"),
        None => String::new(),
    };
    let message = match kind {
        ErrorKind::TimeLimit => format!(
            "the script ran longer than {} and was stopped: do less work per run, and make sure \
             every loop ends",
            duration_text(limits.wall)
        ),
        ErrorKind::MemoryLimit => format!(
            "the script used more than {} of memory and was stopped{at}: keep fewer or smaller \
             values at once",
            bytes_text(limits.memory_bytes)
        ),
        ErrorKind::StackLimit => format!(
            "the script exceeded the stack limit of {} and was stopped{at}: the recursion is \
             too deep (or never ends) — use a loop",
            bytes_text(stack_limit(limits))
        ),
        ErrorKind::CallLimit => format!(
            "the script made more than {} API calls and was stopped: fetch what it needs with \
             fewer calls",
            limits.calls
        ),
        ErrorKind::PrintLimit => format!(
            "the script printed more than {} and was stopped (the output up to the limit is \
             kept): print only what is needed",
            bytes_text(limits.printed_bytes)
        ),
        ErrorKind::Syntax | ErrorKind::Thrown => format!("the script failed{at}"),
    };
    ScriptError { kind, message }
}

fn duration_text(duration: Duration) -> String {
    if duration.subsec_millis() == 0 && duration.as_secs() > 0 { format!("{} s", duration.as_secs()) } else { format!("{} ms", duration.as_millis()) }
}

fn bytes_text(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

fn truncate_at_char(text: &mut String, max: usize) {
    if text.len() > max {
        let mut cut = max;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
}

fn lock(printed: &Mutex<String>) -> MutexGuard<'_, String> {
    printed.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `__print(line)`: appends `line` and a newline, up to the limit.
fn print_line(state: &State, ctx: &Ctx<'_>, line: &str) -> rquickjs::Result<()> {
    if state.stop.get().is_some() {
        return Err(Exception::throw_internal(ctx, "the script was stopped"));
    }
    let mut printed = lock(&state.printed);
    let limit = state.limits.printed_bytes;
    if printed.len() + line.len() < limit {
        printed.push_str(line);
        printed.push('\n');
        return Ok(());
    }
    let mut room = limit.saturating_sub(printed.len()).min(line.len());
    while !line.is_char_boundary(room) {
        room -= 1;
    }
    printed.push_str(&line[..room]);
    drop(printed);
    state.stop.set(Some(ErrorKind::PrintLimit));
    let error = limit_error(ErrorKind::PrintLimit, &state.limits, None);
    Err(Exception::throw_internal(ctx, &error.message))
}

/// `__host_raw(op, argsJson)`: the JSON result as a string, or `{error}` for the host's error
/// (the JS wrapper `__host` throws it, so the error has the caller's stack).
fn host_call<'js>(state: &State, bridge: &Bridge, ctx: &Ctx<'js>, op: String, args: &str) -> rquickjs::Result<Value<'js>> {
    if state.stop.get().is_some() {
        return Err(Exception::throw_internal(ctx, "the script was stopped"));
    }
    if state.calls.get() >= state.limits.calls {
        state.stop.set(Some(ErrorKind::CallLimit));
        let error = limit_error(ErrorKind::CallLimit, &state.limits, None);
        return Err(Exception::throw_internal(ctx, &error.message));
    }
    let args: serde_json::Value = serde_json::from_str(args).map_err(|error| Exception::throw_type(ctx, &format!("__host: argsJson is not JSON ({error})")))?;
    state.calls.set(state.calls.get() + 1);
    let reply = bridge.to_caller.send(FromEngine::Call(op, args)).ok().and_then(|()| bridge.replies.recv().ok());
    match reply {
        Some(Ok(result)) => {
            let json = serde_json::to_string(&result).expect("a JSON value serialises");
            rquickjs::String::from_str(ctx.clone(), &json).map(rquickjs::String::into_value)
        }
        Some(Err(message)) => {
            let error = Object::new(ctx.clone())?;
            error.set("error", message)?;
            Ok(error.into_value())
        }
        None => Err(Exception::throw_internal(ctx, "the API is no longer available")),
    }
}

fn track_rejection<'js>(state: &State, ctx: &Ctx<'js>, promise: Value<'js>, reason: Value<'js>, handled: bool) {
    let mut unhandled = state.unhandled.borrow_mut();
    if handled {
        unhandled.retain(|(saved, _)| saved.clone().restore(ctx).map(|saved| saved != promise).unwrap_or(true));
    } else {
        unhandled.push((Persistent::save(ctx, promise), Persistent::save(ctx, reason)));
    }
}

fn eval<'js, V: FromJs<'js>>(ctx: &Ctx<'js>, source: &str, file: &str, promise: bool) -> rquickjs::Result<V> {
    let mut options = EvalOptions::default();
    options.strict = false;
    options.promise = promise;
    options.filename = Some(file.into());
    ctx.eval_with_options(source, options)
}

/// Runs before the prelude: output, the host wrapper, and what is absent or fixed.
const SETUP: &str = r#"
(() => {
  "use strict";
  // What the functions below use is taken now, so that a script replacing a built-in (a
  // polyfill, a monkey-patch) does not break print or the API.
  const g = globalThis;
  const { apply } = Reflect;
  const { stringify } = JSON;
  const { toWellFormed } = String.prototype;
  const [Err, RangeErr, Str, Num] = [Error, RangeError, String, Number];
  const toText = (value) => {
    if (typeof value === "string") return value;
    try {
      if (value instanceof Err) return Str(value);
      const json = stringify(value);
      if (json !== undefined) return json;
    } catch (_) {}
    try { return Str(value); } catch (_) { return "[value]"; }
  };
  const emit = g.__print;
  const print = function print(...args) {
    let line = "";
    for (let i = 0; i < args.length; i++) line += (i ? " " : "") + toText(args[i]);
    // A lone surrogate has no UTF-8 form: toWellFormed replaces it with U+FFFD.
    emit(apply(toWellFormed, line, []));
  };
  g.print = print;
  g.console = { log: print, info: print, warn: print, error: print, debug: print };

  const raw = g.__host_raw;
  g.__host = function __host(op, argsJson) {
    const result = raw(Str(op), Str(argsJson));
    if (typeof result === "string") return result;
    throw new Err(result.error);
  };

  const absent = (name, why) => function () {
    throw new Err(`${name} is not available in this sandbox: ${why}`);
  };
  const viaApi = "use the functions the API defines";
  g.require = absent("require", `there are no modules or files; ${viaApi}`);
  g.fetch = absent("fetch", `there is no network; ${viaApi}`);
  for (const name of ["setTimeout", "setInterval", "setImmediate"]) {
    g[name] = absent(name, "there are no timers; the script runs straight through");
  }

  const RealDate = g.Date;
  const { construct } = Reflect;
  const noClock = (what) => new Err(
    `${what} is not available in this sandbox: there is no clock, so that a script's result ` +
    `depends only on the API; use the dates the API returns`);
  const SandboxDate = function Date(...args) {
    if (new.target === undefined) throw noClock("Date()");
    if (args.length === 0) throw noClock("new Date() without arguments");
    return construct(RealDate, args, new.target);
  };
  SandboxDate.prototype = RealDate.prototype;
  Object.defineProperty(RealDate.prototype, "constructor",
    { value: SandboxDate, writable: true, configurable: true });
  SandboxDate.parse = RealDate.parse;
  SandboxDate.UTC = RealDate.UTC;
  SandboxDate.now = function now() { throw noClock("Date.now()"); };
  g.Date = SandboxDate;

  // QuickJS's interrupt hook is polled by the interpreter and at every call, not inside the
  // built-ins that walk an array-like's length over holes (`new Array(2 ** 32 - 1).join("")`
  // runs for minutes and cannot be stopped). No real array needs them past MAX_LENGTH: a dense
  // one that long takes 16 bytes an element, far over the memory limit.
  const MAX_LENGTH = 2 ** 25;
  const lengthOf = (value) => {
    if (value === null || (typeof value !== "object" && typeof value !== "function")) return 0;
    const length = Num(value.length);
    return length > 0 ? length : 0;
  };
  const guard = (name, original, checksArgs) => ({
    [name](...args) {
      for (const value of checksArgs ? [this, ...args] : [this]) {
        const length = lengthOf(value);
        if (length > MAX_LENGTH) {
          throw new RangeErr(`Array.prototype.${name}: the array's length ${length} is over ` +
            `the ${MAX_LENGTH} this sandbox goes through; its elements would not fit in memory ` +
            `anyway, so it is mostly holes: build a smaller array`);
        }
      }
      return apply(original, this, args);
    },
  })[name];
  for (const name of ["join", "toLocaleString", "reverse", "copyWithin", "shift", "unshift",
                      "splice", "slice", "concat", "fill", "sort", "flat", "flatMap", "toReversed",
                      "toSorted", "toSpliced", "lastIndexOf", "indexOf", "includes"]) {
    const original = Array.prototype[name];
    if (typeof original !== "function") continue;
    Object.defineProperty(Array.prototype, name,
      { value: guard(name, original, name === "concat"), writable: true, configurable: true });
  }

  let seed = 0x2545f491;
  Math.random = function random() {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})();
"#;

/// Runs after the prelude: what only the prelude may use goes.
const HIDE_PRIVATE: &str = r#"
(() => {
  for (const name of Object.getOwnPropertyNames(globalThis)) {
    if (name.startsWith("__") && !delete globalThis[name]) globalThis[name] = undefined;
  }
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_a_person_writes_them() {
        assert_eq!(bytes_text(32 << 20), "32 MiB");
        assert_eq!(bytes_text(16 << 10), "16 KiB");
        assert_eq!(bytes_text(1500), "1500 bytes");
        assert_eq!(duration_text(Duration::from_secs(5)), "5 s");
        assert_eq!(duration_text(Duration::from_millis(250)), "250 ms");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1500 ms");
    }

    #[test]
    fn positions_are_read_from_the_stack_of_the_named_file() {
        let stack = "    at call (prelude.js:4:20)\n    at <eval> (script.js:12:5)\n";
        assert_eq!(position_in(stack, SCRIPT_FILE), Some((12, 5)));
        assert_eq!(position_in(stack, PRELUDE_FILE), Some((4, 20)));
        assert_eq!(position_in("    at script.js:1:9\n", SCRIPT_FILE), Some((1, 9)));
        assert_eq!(position_in("    at f (native)\n", SCRIPT_FILE), None);
    }

    /// A built-in that does not poll the interrupt hook cannot hold the caller past the grace:
    /// the run ends with TimeLimit and its thread stops by itself later.
    #[test]
    fn an_engine_stuck_in_a_built_in_is_abandoned_after_the_grace() {
        let limits = Limits { wall: Duration::from_millis(50), ..Limits::default() };
        let mut host = |_: &str, _: serde_json::Value| Ok(serde_json::Value::Null);
        // Just under the array guard: one native call that does not poll (about 0.5 s here).
        let script = "print('before'); new Array(2 ** 25 - 1).join('');";
        let start = Instant::now();
        // With the usual grace the call ends by itself, the script with it (the hook is not
        // polled again, so the run ends normally).
        run("", script, &limits, &mut host);
        let natural = start.elapsed();
        assert!(natural > Duration::from_millis(150), "the call must outlast the wall: {natural:?}");

        let start = Instant::now();
        let abandoned = run_with_grace("", script, &limits, &mut host, Duration::ZERO);
        let took = start.elapsed();
        let error = abandoned.error.expect("stopped");
        assert_eq!(error.kind, ErrorKind::TimeLimit, "{}", error.message);
        assert_eq!(abandoned.printed, "before\n", "what was printed is kept");
        assert!(took < natural / 2, "{took:?} vs {natural:?}");

        let outcome = run("", "print(1)", &Limits::default(), &mut host);
        assert_eq!(outcome.error, None);
        assert_eq!(outcome.printed, "1\n");
    }
}
