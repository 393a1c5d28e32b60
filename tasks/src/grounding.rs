//! Grounding: every entity a final answer names, checked against the world as it stands right
//! after the session (read-only). The rules are `docs/grounding.md`; in short:
//!
//! * **Ids** are read only where a kind word introduces them: `ticket 4711`, `tickets #3, #4 and
//!   #9`, `deploy 12`, `notification 5`, `customer #3`, `assignee_id: 12345`, `change request #6`
//!   (`PR`, `pull request`), `checkout-web#6`. A bare `#N` is a ticket, or a change request when
//!   its sentence speaks of change requests or names a repository. A number followed by `.digit`
//!   is a version, not an id.
//! * **Names** the world holds are found wherever they appear, whole words, any case: customers,
//!   users, repositories (`owner/name`, or the bare name) and runbook slugs. Names it does not
//!   hold are read only where a kind word introduces them (`customer Umbrella Health`, `assigned
//!   to Omar Reyes`, `anyone named …`, `service \`x\``, `runbook x-y`), as one to five capitalised
//!   words (identifiers for services, repositories and runbooks). Service names are common words
//!   (`search`, `email`), so a known one counts only beside the word `service` or a deploy verb.
//! * Each is **grounded** (exactly one entity of its kind has it), **unresolved** (several have
//!   it, or some have it only in part: a first name, a name's first words), **hallucinated** (none
//!   has it) or **denied** (none has it, and its sentence says so: "no customer named …", "could
//!   not find …"). Each reference counts once per answer.
//!
//! Extraction ([`scan`]) and judging ([`judge`]) are pure; [`ground`] reads the world between them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use backend::PgPool;
use backend::world::ReadOnly;
use records::{Groundedness, Grounding, Reference, ReferenceKind};
use regex::Regex;

/// A span of the answer that names something, before the world is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    pub start: usize,
    pub end: usize,
    pub what: Named,
}

/// What a [`Mention`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// An id of a table ([`ReferenceKind::Ticket`], `Deploy`, `Notification`, `Customer`, `User`).
    Id(ReferenceKind, i64),
    /// A change request's number, with the repository written beside it (`owner/name` or a bare
    /// name) when there is one.
    ChangeRequest(Option<String>, i64),
    /// `#N` alone: a ticket, or a change request in a sentence about change requests or a repository.
    Hash(i64),
    /// A name introduced by a kind word: customer, user, or either (`named …`).
    Person(ReferenceKind, String),
    /// A service name: `strong` when written so that an unknown one is a claim (backticks,
    /// quotes, an identifier after `service`), not a word of prose.
    Service { name: String, strong: bool },
    /// A repository introduced by the word `repository`.
    Repository(String),
    /// A runbook slug introduced by the word `runbook`.
    Runbook(String),
}

/// What the world holds that an answer can name, read after the session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Known {
    pub customers: Vec<String>,
    pub users: Vec<String>,
    pub services: Vec<String>,
    /// (owner, name)
    pub repos: Vec<(String, String)>,
    pub runbooks: Vec<String>,
    /// The ids asked for that exist, per kind.
    pub ids: BTreeMap<ReferenceKind, BTreeSet<i64>>,
    /// The change requests whose number was asked for: (owner, name, number).
    pub change_requests: Vec<(String, String, i64)>,
}

const NAME: &str = r"([A-Z][A-Za-z'’-]*(?:[ \t]+(?:&[ \t]+)?[A-Z][A-Za-z'’-]*){0,4})";
const LIST: &str = r"((?:\s*(?:,|and|or|&)\s*#?\d+)*)";

static IDS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\b(tickets?|deploys?|deployments?|notifications?)\s+(?:no\.\s*|number\s+)?#?(\d+){LIST}")).expect("regex"));
static ID_FIELDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(ticket|deploy|deployment|notification|customer|user|assignee|author|reviewer)[ _]id\b\s*[:=]?\s*#?(\d+)").expect("regex")
});
static PERSON_IDS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\b(customer|user)\s+#(\d+)").expect("regex"));
static CHANGE_REQUESTS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(?i)\b(?:change[ -]requests?|pull requests?|merge requests?|PRs?|CRs?|MRs?)\s*#?(\d+){LIST}")).expect("regex"));
static REPO_HASH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b((?:[a-z][a-z0-9_-]*/)?[a-z][a-z0-9._-]*[a-z0-9])\s*#(\d+)").expect("regex"));
static KIND_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:tickets?|deploy(?:ment)?s?|notifications?|change[ -]requests?|pull requests?|merge requests?|PRs?|CRs?|MRs?)\b").expect("regex")
});
static HASH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"#(\d+)").expect("regex"));
static PEOPLE: LazyLock<Vec<(ReferenceKind, Regex)>> = LazyLock::new(|| {
    let q = r#"["“'‘]?"#;
    [
        (ReferenceKind::Customer, format!(r"(?i:\b(?:customers?|clients?|company)(?:\s+(?:named|called))?\s+){q}{NAME}")),
        (ReferenceKind::User, format!(r"(?i:\b(?:users?|assignees?|engineers?|reviewers?|teammates?|colleagues?)(?:\s+(?:named|called))?\s+){q}{NAME}")),
        (ReferenceKind::User, format!(r"(?i:\b(?:assigned|reassigned|handed|given|moved|escalated|sent)\b[^.!?\n]{{0,40}}?\bto\s+){NAME}")),
        (ReferenceKind::User, format!(r"(?i:\b(?:notified|pinged|messaged)\s+){NAME}")),
        (ReferenceKind::Name, format!(r"(?i:\b(?:named|called)\s+){q}{NAME}")),
    ]
    .into_iter()
    .map(|(k, r)| (k, Regex::new(&r).expect("regex")))
    .collect()
});
static SERVICE_STRONG: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r#"(?i:\bservices?\s+(?:(?:named|called)\s+)?)[`"“']([a-z][a-z0-9_-]*)[`"”']"#,
        r"(?i:\bservices?\s+(?:(?:named|called)\s+)?)([a-z][a-z0-9]*[-_][a-z0-9_-]*[a-z0-9])",
        r#"[`"“]([a-z][a-z0-9_-]*)[`"”]\s+(?i:service)\b"#,
    ]
    .into_iter()
    .map(|r| Regex::new(r).expect("regex"))
    .collect()
});
static SERVICE_WEAK: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"\b([a-z][a-z0-9-]*)\s+(?i:services?)\b",
        r"(?i:\bservices?\s+)([a-z][a-z0-9-]*)",
        r"(?i:\b(?:deploy(?:ed|s|ing)?|redeploy(?:ed|s|ing)?|roll(?:ed|ing)?\s+back|rollbacks?\s+of|promot(?:e|ed|ing))\s+(?:of\s+)?(?:the\s+)?)([a-z][a-z0-9-]*)",
    ]
    .into_iter()
    .map(|r| Regex::new(r).expect("regex"))
    .collect()
});
static REPOSITORIES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i:\brepo(?:sitory|sitories|s)?\s+)[`"“']?([a-z][a-z0-9._]*-[a-z0-9._-]*[a-z0-9])"#).expect("regex"));
static RUNBOOKS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"(?i:\brunbooks?\s+)[`"“']?([a-z][a-z0-9]*-[a-z0-9-]*[a-z0-9])"#).expect("regex"));
static OWNER_NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([a-z][a-z0-9_-]*)/([a-z0-9][a-z0-9._-]*[a-z0-9])").expect("regex"));

/// Words that open a capitalised phrase without naming anyone ("assigned to The platform team").
const NOT_NAMES: &[&str] = &[
    "the",
    "a",
    "an",
    "this",
    "that",
    "these",
    "those",
    "their",
    "his",
    "her",
    "its",
    "our",
    "your",
    "my",
    "no",
    "nobody",
    "none",
    "someone",
    "anyone",
    "everyone",
    "it",
    "them",
    "him",
    "he",
    "she",
    "they",
    "i",
    "we",
    "you",
    "me",
    "us",
    "each",
    "every",
    "all",
    "both",
    "one",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "today",
    "tomorrow",
    "yesterday",
    "team",
    "ticket",
    "tickets",
    "id",
    "status",
    "priority",
    "open",
    "closed",
    "resolved",
];

/// A sentence that says something does not exist or was not found (lower case).
const DENIALS: &[&str] = &[
    "no such",
    "not found",
    "could not find",
    "couldn't find",
    "cannot find",
    "can't find",
    "could not locate",
    "did not find",
    "didn't find",
    "does not exist",
    "doesn't exist",
    "do not exist",
    "don't exist",
    "did not exist",
    "there is no",
    "there's no",
    "there are no",
    "is not a",
    "isn't a",
    "not a customer",
    "not a user",
    "no customer",
    "no user",
    "no one",
    "nobody",
    "no record",
    "no match",
    "unknown",
];

/// Every span of `answer` that names something by a kind word or an id (names the world holds
/// are found by [`judge`], which knows them).
pub fn scan(answer: &str) -> Vec<Mention> {
    let mut out = Vec::new();
    let mut push = |start: usize, end: usize, what: Named| out.push(Mention { start, end, what });
    for c in IDS.captures_iter(answer) {
        let kind = match c[1].to_ascii_lowercase().trim_end_matches('s') {
            "ticket" => ReferenceKind::Ticket,
            "notification" => ReferenceKind::Notification,
            _ => ReferenceKind::Deploy,
        };
        let whole = c.get(0).expect("match");
        if is_version(answer, c.get(2).expect("id").end()) {
            continue;
        }
        for (start, end, id) in numbers(answer, whole.start(), c.get(2).expect("id"), c.get(3)) {
            push(start, end, Named::Id(kind, id));
        }
    }
    for c in ID_FIELDS.captures_iter(answer) {
        let kind = match c[1].to_ascii_lowercase().as_str() {
            "ticket" => ReferenceKind::Ticket,
            "deploy" | "deployment" => ReferenceKind::Deploy,
            "notification" => ReferenceKind::Notification,
            "customer" => ReferenceKind::Customer,
            _ => ReferenceKind::User,
        };
        let whole = c.get(0).expect("match");
        push(whole.start(), whole.end(), Named::Id(kind, parse_id(&c[2])));
    }
    for c in PERSON_IDS.captures_iter(answer) {
        let kind = if c[1].eq_ignore_ascii_case("customer") { ReferenceKind::Customer } else { ReferenceKind::User };
        let whole = c.get(0).expect("match");
        push(whole.start(), whole.end(), Named::Id(kind, parse_id(&c[2])));
    }
    for c in CHANGE_REQUESTS.captures_iter(answer) {
        let whole = c.get(0).expect("match");
        for (start, end, n) in numbers(answer, whole.start(), c.get(1).expect("number"), c.get(2)) {
            push(start, end, Named::ChangeRequest(None, n));
        }
    }
    for c in REPO_HASH.captures_iter(answer) {
        let repo = &c[1];
        if !["ticket", "tickets", "deploy", "notification", "pr", "cr", "mr", "request", "requests"].contains(&repo.to_ascii_lowercase().as_str()) {
            let whole = c.get(0).expect("match");
            push(whole.start(), whole.end(), Named::ChangeRequest(Some(repo.to_owned()), parse_id(&c[2])));
        }
    }
    for c in HASH.captures_iter(answer) {
        let whole = c.get(0).expect("match");
        push(whole.start(), whole.end(), Named::Hash(parse_id(&c[1])));
    }
    for (kind, re) in PEOPLE.iter() {
        for c in re.captures_iter(answer) {
            let m = c.get(1).expect("name");
            // "five people are called Wen": a name several hold, not a reference to one of them.
            let before = answer[..c.get(0).expect("match").start()].trim_end().to_lowercase();
            if before.ends_with(" are") || before.ends_with(" were") {
                continue;
            }
            if let Some(name) = person_name(m.as_str()) {
                push(m.start(), m.start() + name.len(), Named::Person(*kind, name.to_owned()));
            }
        }
    }
    for (re, strong) in SERVICE_STRONG.iter().map(|r| (r, true)).chain(SERVICE_WEAK.iter().map(|r| (r, false))) {
        for c in re.captures_iter(answer) {
            let m = c.get(1).expect("service");
            push(m.start(), m.end(), Named::Service { name: m.as_str().to_owned(), strong });
        }
    }
    for c in REPOSITORIES.captures_iter(answer) {
        let m = c.get(1).expect("repository");
        push(m.start(), m.end(), Named::Repository(m.as_str().to_owned()));
    }
    for c in RUNBOOKS.captures_iter(answer) {
        let m = c.get(1).expect("runbook");
        push(m.start(), m.end(), Named::Runbook(m.as_str().to_owned()));
    }
    out
}

/// The numbers a kind word introduces: the first, and those of a list after it (`#3, #4 and #9`).
fn numbers(answer: &str, start: usize, first: regex::Match, list: Option<regex::Match>) -> Vec<(usize, usize, i64)> {
    let mut out = vec![(start, first.end(), parse_id(first.as_str()))];
    if let Some(list) = list {
        static DIGITS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+").expect("regex"));
        for d in DIGITS.find_iter(list.as_str()) {
            let (mut s, e) = (list.start() + d.start(), list.start() + d.end());
            if answer[..s].ends_with('#') {
                s -= 1;
            }
            if !is_version(answer, e) {
                out.push((s, e, parse_id(d.as_str())));
            }
        }
    }
    out
}

/// An id too large to be one is `-1`, which no row has.
fn parse_id(digits: &str) -> i64 {
    digits.parse().unwrap_or(-1)
}

/// `1.4.2` after `deploy `: a version, not an id.
fn is_version(answer: &str, end: usize) -> bool {
    let rest = &answer.as_bytes()[end..];
    rest.len() >= 2 && matches!(rest[0], b'.' | b'-') && rest[1].is_ascii_digit()
}

/// The name in a capitalised phrase after a kind word: without a trailing possessive, and none
/// when it opens with a word that names no one.
fn person_name(phrase: &str) -> Option<&str> {
    let name = phrase.trim_end_matches("'s").trim_end_matches("’s").trim_end_matches(['\'', '’', '-']);
    let first = name.split_whitespace().next()?.to_lowercase();
    (!NOT_NAMES.contains(&first.as_str())).then_some(name)
}

/// Reads what [`judge`] needs to know about the mentions of `answer`, in one read-only transaction.
pub async fn read_known(read: &mut ReadOnly, mentions: &[Mention]) -> Result<Known, String> {
    let mut ids: BTreeMap<ReferenceKind, BTreeSet<i64>> = BTreeMap::new();
    let mut numbers = BTreeSet::new();
    for m in mentions {
        match m.what {
            Named::Id(kind, id) => {
                ids.entry(kind).or_default().insert(id);
            }
            // What a bare `#N` is depends on its sentence: ask for every kind it can be.
            Named::Hash(n) => {
                for kind in [ReferenceKind::Ticket, ReferenceKind::Deploy, ReferenceKind::Notification] {
                    ids.entry(kind).or_default().insert(n);
                }
                numbers.insert(n);
            }
            Named::ChangeRequest(_, n) => {
                numbers.insert(n);
            }
            _ => {}
        }
    }
    let list = |xs: &BTreeSet<i64>| xs.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let mut queries = vec![
        "SELECT name FROM customers".to_owned(),
        "SELECT name FROM users".to_owned(),
        "SELECT name FROM services".to_owned(),
        "SELECT owner, name FROM repos".to_owned(),
        "SELECT slug FROM runbooks".to_owned(),
    ];
    if !numbers.is_empty() {
        queries
            .push(format!("SELECT r.owner, r.name, c.number FROM change_requests c JOIN repos r ON r.id = c.repo_id WHERE c.number IN ({})", list(&numbers)));
    }
    let kinds: Vec<ReferenceKind> = ids.keys().copied().collect();
    for (kind, wanted) in &ids {
        queries.push(format!("SELECT id FROM {} WHERE id IN ({})", table_of(*kind), list(wanted)));
    }
    let mut rows = read.rows(&queries).await.map_err(|e| e.to_string())?.into_iter();
    let mut next = || rows.next().unwrap_or_default();
    let text = |r: &serde_json::Value, key: &str| r[key].as_str().map(str::to_owned);
    let customers = next().iter().filter_map(|r| text(r, "name")).collect();
    let users = next().iter().filter_map(|r| text(r, "name")).collect();
    let services = next().iter().filter_map(|r| text(r, "name")).collect();
    let repos = next().iter().filter_map(|r| Some((text(r, "owner")?, text(r, "name")?))).collect();
    let runbooks = next().iter().filter_map(|r| text(r, "slug")).collect();
    let change_requests = if numbers.is_empty() {
        Vec::new()
    } else {
        next().iter().filter_map(|r| Some((text(r, "owner")?, text(r, "name")?, r["number"].as_i64()?))).collect()
    };
    let ids = kinds.into_iter().map(|k| (k, next().iter().filter_map(|r| r["id"].as_i64()).collect())).collect();
    Ok(Known { customers, users, services, repos, runbooks, ids, change_requests })
}

fn table_of(kind: ReferenceKind) -> &'static str {
    match kind {
        ReferenceKind::Ticket => "tickets",
        ReferenceKind::Deploy => "deploys",
        ReferenceKind::Notification => "notifications",
        ReferenceKind::Customer => "customers",
        _ => "users",
    }
}

/// Scans `answer`, reads the world, judges: the grounding of one final answer.
pub async fn ground(pool: &PgPool, answer: &str) -> Result<Grounding, String> {
    let mut read = ReadOnly::begin(pool).await.map_err(|e| e.to_string())?;
    let grounding = ground_in(&mut read, answer).await;
    read.end().await.map_err(|e| e.to_string())?;
    grounding
}

/// [`ground`] inside a read the caller holds (a verifier's, so the answer is grounded in the
/// snapshot its checks read).
pub async fn ground_in(read: &mut ReadOnly, answer: &str) -> Result<Grounding, String> {
    if answer.trim().is_empty() {
        return Ok(Grounding::default());
    }
    let mentions = scan(answer);
    let known = read_known(read, &mentions).await?;
    Ok(judge(answer, &mentions, &known))
}

/// A candidate reference, before overlapping ones are settled.
struct Candidate {
    start: usize,
    end: usize,
    /// Lower wins an overlap: known names, then ids, then names introduced by a kind word, then `#N`.
    rank: u8,
    kind: ReferenceKind,
    key: String,
    status: Groundedness,
    detail: Option<String>,
}

/// Judges every mention of `answer` against `known`, adds the names `known` holds wherever the
/// answer writes them, settles overlaps and repeats.
pub fn judge(answer: &str, mentions: &[Mention], known: &Known) -> Grounding {
    judge_mentions(answer, mentions, known, false)
}

/// [`judge`] of the given mentions only — what a model judge found in the answer — resolved
/// against the world by the same rules (exactly one, several, in part, none; denied in a sentence
/// that says so). Names the world holds count only where they overlap a given mention: the
/// extractor's own finds are not added.
pub fn resolve(answer: &str, mentions: &[Mention], known: &Known) -> Grounding {
    judge_mentions(answer, mentions, known, true)
}

/// A judge's reference — the words of the answer and the kind it says they name — as a
/// [`Mention`] of the first place `answer` writes them (case-insensitive); none when the answer
/// does not, or when an id kind's words hold no number.
pub fn mention_of(answer: &str, text: &str, kind: ReferenceKind) -> Option<Mention> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let start = answer.to_lowercase().find(&text.to_lowercase())?;
    let end = start + text.len();
    let words = &answer[start..end];
    let number = || words.split(|c: char| !c.is_ascii_digit()).rev().find(|d| !d.is_empty()).and_then(|d| d.parse::<i64>().ok());
    let what = match kind {
        ReferenceKind::Ticket | ReferenceKind::Deploy | ReferenceKind::Notification => Named::Id(kind, number()?),
        ReferenceKind::Customer | ReferenceKind::User if words.chars().all(|c| c.is_ascii_digit() || c == '#' || c.is_whitespace()) => {
            Named::Id(kind, number()?)
        }
        ReferenceKind::Customer | ReferenceKind::User | ReferenceKind::Name => Named::Person(kind, words.to_owned()),
        ReferenceKind::ChangeRequest => {
            let repo = words.split_once('#').map(|(r, _)| r.trim().trim_end_matches(|c: char| !c.is_alphanumeric())).filter(|r| !r.is_empty());
            Named::ChangeRequest(repo.map(str::to_owned), number()?)
        }
        ReferenceKind::Service => Named::Service { name: words.to_owned(), strong: true },
        ReferenceKind::Repository => Named::Repository(words.rsplit('/').next().unwrap_or(words).to_owned()),
        ReferenceKind::Runbook => Named::Runbook(words.to_owned()),
    };
    Some(Mention { start, end, what })
}

fn judge_mentions(answer: &str, mentions: &[Mention], known: &Known, only_mentioned: bool) -> Grounding {
    let sentences = sentences(answer);
    let denied_at = |at: usize| sentences.iter().find(|(s, e)| (*s..=*e).contains(&at)).is_some_and(|(s, e)| denies(&answer[*s..*e]));
    let mut candidates = dictionary(answer, known);
    if only_mentioned {
        candidates.retain(|c| mentions.iter().any(|m| m.start < c.end && c.start < m.end));
    }
    let repo_in_sentence = |at: usize| -> Option<String> {
        let (s, e) = *sentences.iter().find(|(s, e)| (*s..=*e).contains(&at))?;
        repo_near(&answer[s..e], at - s, known)
    };
    // The kind word nearest before `at` in its sentence: what a bare `#N` is.
    let kind_before = |at: usize| -> Option<ReferenceKind> {
        let (s, _) = *sentences.iter().find(|(s, e)| (*s..=*e).contains(&at))?;
        KIND_WORDS.find_iter(&answer[s..at]).last().map(|w| match w.as_str().to_ascii_lowercase().as_bytes()[0] {
            b't' => ReferenceKind::Ticket,
            b'd' => ReferenceKind::Deploy,
            b'n' => ReferenceKind::Notification,
            _ => ReferenceKind::ChangeRequest,
        })
    };
    let exists = |kind: ReferenceKind, id: i64| known.ids.get(&kind).is_some_and(|ids| ids.contains(&id));
    let mut later = Vec::new();
    for m in mentions {
        let missing = |what: String| if denied_at(m.start) { (Groundedness::Denied, Some(what)) } else { (Groundedness::Hallucinated, Some(what)) };
        let c = |rank, kind, key: String, (status, detail): (Groundedness, Option<String>)| Candidate {
            start: m.start,
            end: m.end,
            rank,
            kind,
            key,
            status,
            detail,
        };
        match &m.what {
            Named::Id(kind, id) => {
                let verdict = if exists(*kind, *id) { (Groundedness::Grounded, None) } else { missing(format!("no {} {id}", kind.as_str())) };
                later.push(c(1, *kind, format!("#{id}"), verdict));
            }
            Named::ChangeRequest(Some(repo), _) if !is_repo(known, repo) => {}
            Named::ChangeRequest(repo, n) => {
                // `checkout-web#6` outranks the known name inside it.
                let rank = if repo.is_some() { 0 } else { 1 };
                let repo = repo.clone().or_else(|| repo_in_sentence(m.start));
                later.push(c(rank, ReferenceKind::ChangeRequest, cr_key(repo.as_deref(), *n), change_request(known, repo.as_deref(), *n, &missing)));
            }
            Named::Hash(n) => {
                let repo = repo_in_sentence(m.start);
                let kind = kind_before(m.start);
                if kind == Some(ReferenceKind::Deploy) || kind == Some(ReferenceKind::Notification) {
                    let kind = kind.expect("some");
                    let verdict = if exists(kind, *n) { (Groundedness::Grounded, None) } else { missing(format!("no {} {n}", kind.as_str())) };
                    later.push(c(4, kind, format!("#{n}"), verdict));
                } else if kind == Some(ReferenceKind::ChangeRequest) || (kind.is_none() && repo.is_some()) {
                    later.push(c(4, ReferenceKind::ChangeRequest, cr_key(repo.as_deref(), *n), change_request(known, repo.as_deref(), *n, &missing)));
                } else {
                    let verdict = if exists(ReferenceKind::Ticket, *n) { (Groundedness::Grounded, None) } else { missing(format!("no ticket {n}")) };
                    later.push(c(4, ReferenceKind::Ticket, format!("#{n}"), verdict));
                }
            }
            Named::Person(kind, name) => {
                let (kind, verdict) = person(known, *kind, name, &missing);
                later.push(c(3, kind, name.to_lowercase(), verdict));
            }
            Named::Service { name, strong } => {
                let n = known.services.iter().filter(|s| s.eq_ignore_ascii_case(name)).count();
                if n > 0 {
                    later.push(c(2, ReferenceKind::Service, name.to_lowercase(), (Groundedness::Grounded, None)));
                } else if *strong {
                    later.push(c(3, ReferenceKind::Service, name.to_lowercase(), missing(format!("no service {name}"))));
                }
            }
            Named::Repository(name) => {
                let n = known.repos.iter().filter(|(_, r)| r.eq_ignore_ascii_case(name)).count();
                if n == 0 {
                    later.push(c(3, ReferenceKind::Repository, name.to_lowercase(), missing(format!("no repository {name}"))));
                }
            }
            Named::Runbook(slug) => {
                if !known.runbooks.iter().any(|r| r.eq_ignore_ascii_case(slug)) {
                    later.push(c(3, ReferenceKind::Runbook, slug.to_lowercase(), missing(format!("no runbook {slug}"))));
                }
            }
        }
    }
    candidates.extend(later);
    settle(answer, candidates)
}

/// `owner/name` or a bare name of a repository the world holds.
fn is_repo(known: &Known, repo: &str) -> bool {
    known.repos.iter().any(|(o, n)| repo_matches(repo, o, n))
}

/// `repo` (`owner/name` or a bare name) is the repository `owner/name`.
fn repo_matches(repo: &str, owner: &str, name: &str) -> bool {
    match repo.split_once('/') {
        Some((o, n)) => o.eq_ignore_ascii_case(owner) && n.eq_ignore_ascii_case(name),
        None => repo.eq_ignore_ascii_case(name),
    }
}

fn cr_key(repo: Option<&str>, n: i64) -> String {
    match repo {
        Some(r) => format!("{}#{n}", r.to_lowercase()),
        None => format!("#{n}"),
    }
}

/// A change request by number, in the repository written beside it when there is one.
fn change_request(known: &Known, repo: Option<&str>, n: i64, missing: &dyn Fn(String) -> (Groundedness, Option<String>)) -> (Groundedness, Option<String>) {
    let in_repo = |owner: &str, name: &str| repo.is_none_or(|r| repo_matches(r, owner, name));
    let found: Vec<String> = known.change_requests.iter().filter(|(o, nm, num)| *num == n && in_repo(o, nm)).map(|(o, nm, _)| format!("{o}/{nm}")).collect();
    match (found.len(), repo) {
        (1, _) => (Groundedness::Grounded, None),
        (0, Some(r)) => missing(format!("no change request #{n} in {r}")),
        (0, None) => missing(format!("no change request #{n}")),
        (k, _) => (Groundedness::Unresolved, Some(format!("change request #{n} exists in {k} repositories: {}", found.join(", ")))),
    }
}

/// A name introduced by a kind word: exactly one entity of the kind has it (grounded), several
/// (unresolved), some only in part — a first or last name, the first words of a name
/// (unresolved), none (hallucinated, or denied in a sentence that says so).
fn person(
    known: &Known,
    kind: ReferenceKind,
    name: &str,
    missing: &dyn Fn(String) -> (Groundedness, Option<String>),
) -> (ReferenceKind, (Groundedness, Option<String>)) {
    let pools: Vec<(ReferenceKind, &Vec<String>)> = match kind {
        ReferenceKind::Customer => vec![(ReferenceKind::Customer, &known.customers)],
        ReferenceKind::User => vec![(ReferenceKind::User, &known.users)],
        _ => vec![(ReferenceKind::Customer, &known.customers), (ReferenceKind::User, &known.users)],
    };
    let wanted = words(name);
    let exact: Vec<(ReferenceKind, &String)> = pools.iter().flat_map(|(k, names)| names.iter().filter(|n| words(n) == wanted).map(move |n| (*k, n))).collect();
    let partial: Vec<(ReferenceKind, &String)> = pools
        .iter()
        .flat_map(|(k, names)| {
            let wanted = &wanted;
            names.iter().filter(move |n| in_part(&words(n), wanted)).map(move |n| (*k, n))
        })
        .collect();
    let shown = |xs: &[(ReferenceKind, &String)]| xs.iter().take(3).map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(", ");
    match (exact.as_slice(), partial.as_slice()) {
        ([(k, _)], _) => (*k, (Groundedness::Grounded, None)),
        ([], []) => (kind, missing(format!("no {} named {name}", kind.as_str()))),
        ([], some) => (kind, (Groundedness::Unresolved, Some(format!("fits {} in part: {}", some.len(), shown(some))))),
        (several, _) => (kind, (Groundedness::Unresolved, Some(format!("{} are named {name}", several.len())))),
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()).filter(|w| !w.is_empty()).collect()
}

/// `wanted` is one word of `name` (a first or last name), or its first words.
fn in_part(name: &[String], wanted: &[String]) -> bool {
    match wanted {
        [one] => name.contains(one),
        _ => wanted.len() < name.len() && name.starts_with(wanted),
    }
}

/// The names `known` holds, wherever the answer writes them as whole words, any case.
fn dictionary(answer: &str, known: &Known) -> Vec<Candidate> {
    let mut patterns: Vec<(String, ReferenceKind, usize)> = Vec::new();
    let mut add = |name: &str, kind, count| {
        if name.len() >= 3 {
            patterns.push((name.to_owned(), kind, count));
        }
    };
    let tally = |names: &[String]| {
        let mut m: BTreeMap<String, usize> = BTreeMap::new();
        for n in names {
            *m.entry(n.to_lowercase()).or_default() += 1;
        }
        m
    };
    for (name, n) in tally(&known.customers) {
        add(&name, ReferenceKind::Customer, n);
    }
    for (name, n) in tally(&known.users) {
        add(&name, ReferenceKind::User, n);
    }
    for (name, n) in tally(&known.runbooks) {
        add(&name, ReferenceKind::Runbook, n);
    }
    let full: Vec<String> = known.repos.iter().map(|(o, n)| format!("{o}/{n}")).collect();
    for (name, n) in tally(&full) {
        add(&name, ReferenceKind::Repository, n);
    }
    let bare: Vec<String> = known.repos.iter().map(|(_, n)| n.clone()).collect();
    let bare = tally(&bare);
    for (name, n) in &bare {
        // A bare repository name that is also a service's name is the service's, found by context.
        if !known.services.iter().any(|s| s.eq_ignore_ascii_case(name)) {
            add(name, ReferenceKind::Repository, *n);
        }
    }
    // One name can be two kinds (a customer and a user both "Jordan Lee"): it is one pattern of
    // the first kind listed, counted as several entities.
    let mut unique: Vec<(String, ReferenceKind, usize)> = Vec::new();
    for (name, kind, n) in patterns {
        if let Some(u) = unique.iter_mut().find(|u| u.0 == name) {
            u.2 += n;
        } else {
            unique.push((name, kind, n));
        }
    }
    let Ok(ac) = AhoCorasickBuilder::new().ascii_case_insensitive(true).match_kind(MatchKind::LeftmostLongest).build(unique.iter().map(|u| u.0.as_str()))
    else {
        return Vec::new();
    };
    find_whole(&ac, answer)
        .map(|(start, end, i)| {
            let (name, kind, n) = &unique[i];
            let (status, detail) = if *n == 1 {
                (Groundedness::Grounded, None)
            } else if *kind == ReferenceKind::Repository && !name.contains('/') {
                (Groundedness::Unresolved, Some(format!("{n} repositories are named {name}")))
            } else {
                (Groundedness::Unresolved, Some(format!("{n} entities are named {}", &answer[start..end])))
            };
            Candidate { start, end, rank: 0, kind: *kind, key: name.clone(), status, detail }
        })
        .collect()
}

/// Matches of `ac` in `text` that are whole words (no letter, digit, `_`, `-` or `/` on either side).
fn find_whole<'a>(ac: &'a AhoCorasick, text: &'a str) -> impl Iterator<Item = (usize, usize, usize)> + 'a {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '/');
    ac.find_iter(text).filter_map(move |m| {
        let before = text[..m.start()].chars().next_back();
        let after = text[m.end()..].chars().next();
        // A sentence's full stop after a name is not part of it; `payments-api.` still ends there.
        let after_ok = after.is_none_or(|c| !word(c));
        (before.is_none_or(|c| !word(c)) && after_ok).then(|| (m.start(), m.end(), m.pattern().as_usize()))
    })
}

/// The repository a sentence names nearest before `at` (by `owner/name`, else by bare name), or
/// failing that the first after it.
fn repo_near(sentence: &str, at: usize, known: &Known) -> Option<String> {
    let mut found: Vec<(usize, String)> =
        OWNER_NAME.captures_iter(sentence).filter(|c| is_repo(known, &c[0])).map(|c| (c.get(0).expect("match").start(), c[0].to_lowercase())).collect();
    let names: BTreeSet<String> = known.repos.iter().map(|(_, n)| n.to_lowercase()).collect();
    let names: Vec<String> = names.into_iter().collect();
    if let Ok(ac) = AhoCorasickBuilder::new().ascii_case_insensitive(true).match_kind(MatchKind::LeftmostLongest).build(&names) {
        found.extend(find_whole(&ac, sentence).map(|(start, _, i)| (start, names[i].clone())));
    }
    found.sort();
    let before = found.iter().rev().find(|(start, _)| *start < at);
    before.or_else(|| found.first()).map(|(_, r)| r.clone())
}

/// Byte spans of the answer's sentences (split after `.`, `!`, `?` followed by a space, and at
/// line breaks).
fn sentences(answer: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = answer.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let end_here = b == b'\n' || (matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(|n| n.is_ascii_whitespace()));
        if end_here {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    out.push((start, answer.len()));
    out
}

fn denies(sentence: &str) -> bool {
    let s = sentence.to_lowercase().replace('’', "'");
    DENIALS.iter().any(|d| s.contains(d))
}

/// Keeps the best of overlapping candidates, then each (kind, key) once, in answer order.
fn settle(answer: &str, mut candidates: Vec<Candidate>) -> Grounding {
    candidates.sort_by_key(|c| (c.rank, c.start, std::cmp::Reverse(c.end)));
    let mut kept: Vec<Candidate> = Vec::new();
    for c in candidates {
        if !kept.iter().any(|k| c.start < k.end && k.start < c.end) {
            kept.push(c);
        }
    }
    kept.sort_by_key(|c| c.start);
    let mut seen = BTreeSet::new();
    let references = kept
        .into_iter()
        .filter(|c| seen.insert((c.kind, c.key.clone())))
        .map(|c| Reference { text: answer[c.start..c.end].to_owned(), kind: c.kind, status: c.status, detail: c.detail })
        .collect();
    Grounding { references }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_judges_reference_becomes_the_mention_of_the_words_it_copied() {
        let answer = "Ticket 77 went to Priya Raman; checkout/checkout-web#6 is merged, and the Acme customer (id 12) is told.";
        let m = mention_of(answer, "ticket 77", ReferenceKind::Ticket).unwrap();
        assert_eq!((&answer[m.start..m.end], m.what), ("Ticket 77", Named::Id(ReferenceKind::Ticket, 77)));
        assert_eq!(mention_of(answer, "Priya Raman", ReferenceKind::User).unwrap().what, Named::Person(ReferenceKind::User, "Priya Raman".into()));
        assert_eq!(
            mention_of(answer, "checkout/checkout-web#6", ReferenceKind::ChangeRequest).unwrap().what,
            Named::ChangeRequest(Some("checkout/checkout-web".into()), 6)
        );
        assert_eq!(mention_of(answer, "12", ReferenceKind::Customer).unwrap().what, Named::Id(ReferenceKind::Customer, 12));
        assert_eq!(mention_of(answer, "checkout/checkout-web", ReferenceKind::Repository).unwrap().what, Named::Repository("checkout-web".into()));
        // Words the answer does not hold, or an id kind without a number: nothing.
        assert_eq!(mention_of(answer, "ticket 78", ReferenceKind::Ticket), None);
        assert_eq!(mention_of(answer, "the ticket", ReferenceKind::Ticket), None);
        assert_eq!(mention_of(answer, "  ", ReferenceKind::Service), None);
    }

    #[test]
    fn resolving_a_judges_mentions_adds_nothing_the_judge_did_not_find() {
        let known = Known { customers: vec!["Acme Retail".into()], users: vec!["Priya Raman".into()], ..Known::default() };
        let answer = "Priya Raman owns it; Acme Retail was told.";
        // The extractor finds both known names; resolving only the judge's mention keeps one.
        assert_eq!(judge(answer, &[], &known).references.len(), 2);
        let only = [mention_of(answer, "Priya Raman", ReferenceKind::User).unwrap()];
        let g = resolve(answer, &only, &known);
        assert_eq!(g.references.len(), 1, "{g:?}");
        assert_eq!((g.references[0].text.as_str(), g.references[0].status), ("Priya Raman", Groundedness::Grounded));
    }

    use super::*;

    /// A small world: two `payments-api` repositories, two users called Wen, a customer and a
    /// user each.
    fn known() -> Known {
        let s = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        Known {
            customers: s(&["Northwind Traders", "Northwind Trading Co", "Globex Retail", "Acme Logistics Group"]),
            users: s(&["Marcus Chen", "Priya Raman", "Wen Nakamura", "Wen Larsen", "Sofia Alvarez"]),
            services: s(&["checkout", "ledger", "search", "auth"]),
            repos: vec![
                ("platform".into(), "payments-api".into()),
                ("legacy".into(), "payments-api".into()),
                ("checkout".into(), "checkout-web".into()),
                ("identity".into(), "auth-service".into()),
            ],
            runbooks: s(&["ledger-disk-full", "checkout-high-latency"]),
            ids: [
                (ReferenceKind::Ticket, [77, 301, 401].into_iter().collect()),
                (ReferenceKind::Deploy, [256, 301].into_iter().collect()),
                (ReferenceKind::User, [3].into_iter().collect()),
            ]
            .into_iter()
            .collect(),
            change_requests: vec![
                ("platform".into(), "payments-api".into(), 1),
                ("legacy".into(), "payments-api".into(), 1),
                ("legacy".into(), "payments-api".into(), 3),
                ("checkout".into(), "checkout-web".into(), 6),
            ],
        }
    }

    /// (text, kind, status) of every reference of `answer`.
    fn refs(answer: &str) -> Vec<(String, ReferenceKind, Groundedness)> {
        judge(answer, &scan(answer), &known()).references.into_iter().map(|r| (r.text, r.kind, r.status)).collect()
    }

    fn r(text: &str, kind: ReferenceKind, status: Groundedness) -> (String, ReferenceKind, Groundedness) {
        (text.to_owned(), kind, status)
    }

    use Groundedness::*;
    use ReferenceKind as K;

    #[test]
    fn names_the_world_holds_are_grounded_wherever_they_are_written() {
        assert_eq!(
            refs("Opened ticket #401 for Northwind Trading Co, assigned to Marcus Chen; PRIYA RAMAN was told."),
            vec![
                r("ticket #401", K::Ticket, Grounded),
                r("Northwind Trading Co", K::Customer, Grounded),
                r("Marcus Chen", K::User, Grounded),
                r("PRIYA RAMAN", K::User, Grounded)
            ]
        );
        // The longest known name wins: "Northwind Traders" is not read inside another name.
        assert_eq!(refs("Northwind Traders' ticket 77 is urgent."), vec![r("Northwind Traders", K::Customer, Grounded), r("ticket 77", K::Ticket, Grounded)]);
    }

    #[test]
    fn ids_that_do_not_exist_are_hallucinated_and_every_id_of_a_list_counts() {
        assert_eq!(
            refs("Moved tickets 77, #4711 and 301 to Priya Raman."),
            vec![r("tickets 77", K::Ticket, Grounded), r("#4711", K::Ticket, Hallucinated), r("301", K::Ticket, Grounded), r("Priya Raman", K::User, Grounded)]
        );
        assert_eq!(refs("Set assignee_id: 12345 and user_id 3."), vec![r("assignee_id: 12345", K::User, Hallucinated), r("user_id 3", K::User, Grounded)]);
    }

    #[test]
    fn counts_versions_and_times_are_not_ids() {
        assert!(refs("Larkspur has open tickets: 5, and 12 tickets closed.").is_empty());
        assert_eq!(refs("Deployed ledger 1.5.1 to production (deploy #301)."), vec![r("ledger", K::Service, Grounded), r("deploy #301", K::Deploy, Grounded)]);
        assert!(refs("Deploy 1.4.2 went out in 3 minutes.").is_empty());
    }

    #[test]
    fn a_bare_hash_takes_the_kind_named_before_it_in_its_sentence() {
        assert_eq!(refs("Rolled back the latest production deploy, #256."), vec![r("#256", K::Deploy, Grounded)]);
        assert_eq!(refs("Closed #77."), vec![r("#77", K::Ticket, Grounded)]);
        assert_eq!(refs("Closed #78."), vec![r("#78", K::Ticket, Hallucinated)]);
        assert_eq!(
            refs("checkout-web has one open change request: #6."),
            vec![r("checkout-web", K::Repository, Grounded), r("#6", K::ChangeRequest, Grounded)]
        );
    }

    #[test]
    fn change_requests_are_found_in_the_repository_written_beside_them() {
        assert_eq!(refs("Approved checkout-web#6."), vec![r("checkout-web#6", K::ChangeRequest, Grounded)]);
        assert_eq!(
            refs("Approved change request #1 in platform/payments-api."),
            vec![r("change request #1", K::ChangeRequest, Grounded), r("platform/payments-api", K::Repository, Grounded)]
        );
        // #1 exists in both payments-api repositories: without one named it cannot be pinned.
        assert_eq!(refs("Approved PR #1."), vec![r("PR #1", K::ChangeRequest, Unresolved)]);
        assert_eq!(
            refs("Approved change request #9 in checkout/checkout-web."),
            vec![r("change request #9", K::ChangeRequest, Hallucinated), r("checkout/checkout-web", K::Repository, Grounded)]
        );
        // The bare name fits two repositories.
        assert_eq!(refs("The code is in payments-api."), vec![r("payments-api", K::Repository, Unresolved)]);
    }

    #[test]
    fn names_introduced_by_a_kind_word_are_judged_even_when_unknown() {
        assert_eq!(refs("Opened a ticket for customer Umbrella Health."), vec![r("Umbrella Health", K::Customer, Hallucinated)]);
        assert_eq!(refs("Assigned it to Jordan Whitaker."), vec![r("Jordan Whitaker", K::User, Hallucinated)]);
        // A first name several users have, and the first words of a customer's name.
        assert_eq!(refs("Assigned it to Wen."), vec![r("Wen", K::User, Unresolved)]);
        assert_eq!(refs("Updated customer Northwind Trading."), vec![r("Northwind Trading", K::Customer, Unresolved)]);
        // Words that open a phrase without naming anyone.
        assert!(refs("Assigned it to The platform team on Monday.").is_empty());
    }

    #[test]
    fn what_an_answer_says_does_not_exist_is_denied_not_hallucinated() {
        assert_eq!(refs("I could not find anyone named Omar Reyes, so I did nothing."), vec![r("Omar Reyes", K::Name, Denied)]);
        assert_eq!(refs("There is no service called risk-engine."), vec![r("risk-engine", K::Service, Denied)]);
        assert_eq!(refs("Ticket 9999 does not exist."), vec![r("Ticket 9999", K::Ticket, Denied)]);
        // Denial covers only what does not exist: a known name in the sentence stays grounded.
        assert_eq!(refs("I could not assign ticket 77 to Marcus Chen."), vec![r("ticket 77", K::Ticket, Grounded), r("Marcus Chen", K::User, Grounded)]);
        // "five people are called Wen" is about a name several hold, not a reference.
        assert!(refs("Two people are called Wen. Which one?").is_empty());
    }

    #[test]
    fn services_count_only_beside_the_word_or_a_deploy_verb() {
        assert!(refs("Search for the ticket and email me.").is_empty());
        assert_eq!(refs("The search service owns it; redeployed auth."), vec![r("search", K::Service, Grounded), r("auth", K::Service, Grounded)]);
        assert_eq!(refs("Restarted service `billing-v2`."), vec![r("billing-v2", K::Service, Hallucinated)]);
        // An unknown word before "service" is prose, not a claim.
        assert!(refs("The same service failed.").is_empty());
    }

    #[test]
    fn runbooks_and_repositories_by_identifier() {
        assert_eq!(refs("Followed runbook ledger-disk-full."), vec![r("ledger-disk-full", K::Runbook, Grounded)]);
        assert_eq!(refs("Followed runbook ledger-disk-empty."), vec![r("ledger-disk-empty", K::Runbook, Hallucinated)]);
        assert_eq!(refs("The repository payments-core is archived."), vec![r("payments-core", K::Repository, Hallucinated)]);
        // A path is not a repository: its first segment owns none.
        assert!(refs("See src/main.rs, line 71.").is_empty());
    }

    #[test]
    fn each_reference_counts_once_per_answer() {
        let g = judge(
            "Marcus Chen got ticket 77. Marcus Chen was told about ticket 77.",
            &scan("Marcus Chen got ticket 77. Marcus Chen was told about ticket 77."),
            &known(),
        );
        assert_eq!(g.references.len(), 2);
        assert_eq!(g.count(Grounded), 2);
    }
}
