//! The catalogue both arms of the tool_search module offer: the backend's own operations (the
//! flat tools, which really run) plus `N` tools of other systems a company connects — billing,
//! CRM, HR, calendar, docs, chat, paging, … — which are listed but not connected: calling one
//! answers a plain tool error saying so.
//!
//! The other systems' tools are generated from the table below: 20 systems × 5 entities × 8
//! verbs = [`MAX`] tools, each with a realistic name, description and argument schema. Their
//! order is fixed — first the near-misses (tools another system offers for what the backend
//! does: a help desk's `create_ticket`, a CRM's accounts, an HR system's employees), then the
//! rest in an order drawn from a sha256 of [`ORDER_SEED`] and the name — so the catalogue of
//! size `n` is the first `n` tools, and a larger catalogue contains every smaller one.

use std::sync::{Arc, OnceLock};

use rmcp::model::Tool;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// How many tools of other systems the generator can make.
pub const MAX: u32 = 800;

/// The smallest catalogue a run can choose: the tasks are written against a catalogue that holds
/// every near-miss (and the tool of the request that cannot be done).
pub const MIN: u32 = 25;

/// The catalogue sizes the module's sweep and gates use.
pub const LEVELS: &[u32] = &[25, 50, 100, 200, 400, 800];

/// Fixes the order of the tools after the near-misses (changing it changes every catalogue).
const ORDER_SEED: &str = "tool_search catalogue 1";

/// One system a company connects: its tool prefix, its name, what it is, its entities.
pub(crate) struct System {
    pub(crate) prefix: &'static str,
    pub(crate) name: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) entities: [Entity; 5],
}

/// An entity of a system: singular and plural (snake_case), and the fields a new one takes
/// (the first is required).
pub(crate) struct Entity(pub(crate) &'static str, pub(crate) &'static str, pub(crate) &'static [&'static str]);

const SYSTEMS: &[System] = &[
    System {
        prefix: "deskflow",
        name: "Deskflow",
        kind: "the help desk of the partner-support team",
        entities: [
            Entity("ticket", "tickets", &["subject", "requester_email", "priority"]),
            Entity("customer", "customers", &["company_name", "contact_email", "plan"]),
            Entity("agent", "agents", &["full_name", "email", "group"]),
            Entity("macro", "macros", &["title", "actions", "is_shared"]),
            Entity("satisfaction_survey", "satisfaction_surveys", &["ticket_ref", "score", "comment"]),
        ],
    },
    System {
        prefix: "trackly",
        name: "Trackly",
        kind: "the product team's issue tracker",
        entities: [
            Entity("issue", "issues", &["title", "project_key", "assignee_email"]),
            Entity("project", "projects", &["name", "key", "lead_email"]),
            Entity("sprint", "sprints", &["name", "start_date", "end_date"]),
            Entity("label", "labels", &["name", "color"]),
            Entity("milestone", "milestones", &["title", "due_date"]),
        ],
    },
    System {
        prefix: "ledgerly",
        name: "Ledgerly",
        kind: "billing and invoicing",
        entities: [
            Entity("invoice", "invoices", &["account_ref", "amount_cents", "due_date"]),
            Entity("subscription", "subscriptions", &["account_ref", "plan_code", "seats_count"]),
            Entity("payment", "payments", &["invoice_ref", "amount_cents", "method"]),
            Entity("credit_note", "credit_notes", &["invoice_ref", "amount_cents", "reason"]),
            Entity("price_plan", "price_plans", &["code", "monthly_price_cents", "currency"]),
        ],
    },
    System {
        prefix: "pipewise",
        name: "Pipewise",
        kind: "the sales CRM",
        entities: [
            Entity("account", "accounts", &["company_name", "industry", "owner_email"]),
            Entity("contact", "contacts", &["full_name", "email", "account_ref"]),
            Entity("deal", "deals", &["title", "account_ref", "amount_cents"]),
            Entity("lead", "leads", &["full_name", "email", "source"]),
            Entity("activity", "activities", &["subject", "contact_ref", "due_date"]),
        ],
    },
    System {
        prefix: "peoplebase",
        name: "Peoplebase",
        kind: "the HR system",
        entities: [
            Entity("employee", "employees", &["full_name", "work_email", "department"]),
            Entity("team", "teams", &["name", "manager_email"]),
            Entity("time_off_request", "time_off_requests", &["employee_ref", "start_date", "end_date"]),
            Entity("position", "positions", &["title", "department", "level"]),
            Entity("performance_review", "performance_reviews", &["employee_ref", "period", "rating"]),
        ],
    },
    System {
        prefix: "calendo",
        name: "Calendo",
        kind: "the shared calendar",
        entities: [
            Entity("event", "events", &["title", "starts_at", "ends_at"]),
            Entity("calendar", "calendars", &["name", "owner_email", "time_zone"]),
            Entity("meeting_room", "meeting_rooms", &["name", "capacity_count", "floor"]),
            Entity("availability_slot", "availability_slots", &["owner_email", "starts_at", "ends_at"]),
            Entity("invitation", "invitations", &["event_ref", "invitee_email", "is_optional"]),
        ],
    },
    System {
        prefix: "docuvault",
        name: "Docuvault",
        kind: "document storage",
        entities: [
            Entity("document", "documents", &["title", "folder_ref", "content"]),
            Entity("folder", "folders", &["name", "parent_ref"]),
            Entity("document_comment", "document_comments", &["document_ref", "body"]),
            Entity("share_link", "share_links", &["document_ref", "expires_at", "is_public"]),
            Entity("document_template", "document_templates", &["name", "content"]),
        ],
    },
    System {
        prefix: "chatter",
        name: "Chatter",
        kind: "team chat",
        entities: [
            Entity("message", "messages", &["channel_ref", "text", "thread_ref"]),
            Entity("channel", "channels", &["name", "topic", "is_private"]),
            Entity("thread", "threads", &["channel_ref", "title"]),
            Entity("reaction", "reactions", &["message_ref", "emoji"]),
            Entity("user_group", "user_groups", &["handle", "member_emails"]),
        ],
    },
    System {
        prefix: "pagerline",
        name: "Pagerline",
        kind: "on-call paging",
        entities: [
            Entity("alert", "alerts", &["summary", "severity", "service_key"]),
            Entity("schedule", "schedules", &["name", "time_zone", "rotation_days"]),
            Entity("escalation_policy", "escalation_policies", &["name", "repeat_count"]),
            Entity("page", "pages", &["responder_email", "message", "urgency"]),
            Entity("responder", "responders", &["full_name", "email", "phone"]),
        ],
    },
    System {
        prefix: "stockroom",
        name: "Stockroom",
        kind: "warehouse inventory",
        entities: [
            Entity("item", "items", &["sku", "name", "unit_price_cents"]),
            Entity("warehouse", "warehouses", &["name", "city", "capacity_count"]),
            Entity("stock_movement", "stock_movements", &["sku", "quantity_count", "warehouse_ref"]),
            Entity("supplier", "suppliers", &["name", "contact_email", "country"]),
            Entity("purchase_order", "purchase_orders", &["supplier_ref", "sku", "quantity_count"]),
        ],
    },
    System {
        prefix: "shipnest",
        name: "Shipnest",
        kind: "shipping and returns",
        entities: [
            Entity("shipment", "shipments", &["order_ref", "carrier_code", "destination"]),
            Entity("parcel", "parcels", &["shipment_ref", "weight_grams_count"]),
            Entity("carrier", "carriers", &["code", "name"]),
            Entity("return_label", "return_labels", &["order_ref", "reason"]),
            Entity("pickup", "pickups", &["address", "pickup_date"]),
        ],
    },
    System {
        prefix: "payrolla",
        name: "Payrolla",
        kind: "payroll",
        entities: [
            Entity("payslip", "payslips", &["employee_ref", "period", "gross_cents"]),
            Entity("pay_run", "pay_runs", &["period", "pay_date"]),
            Entity("deduction", "deductions", &["employee_ref", "kind", "amount_cents"]),
            Entity("bonus", "bonuses", &["employee_ref", "amount_cents", "reason"]),
            Entity("tax_form", "tax_forms", &["employee_ref", "year", "form_type"]),
        ],
    },
    System {
        prefix: "expensio",
        name: "Expensio",
        kind: "expense management",
        entities: [
            Entity("expense", "expenses", &["employee_email", "amount_cents", "category"]),
            Entity("receipt", "receipts", &["expense_ref", "file_url"]),
            Entity("expense_report", "expense_reports", &["employee_email", "period"]),
            Entity("company_card", "company_cards", &["holder_email", "limit_cents"]),
            Entity("expense_policy", "expense_policies", &["name", "max_amount_cents"]),
        ],
    },
    System {
        prefix: "mailcraft",
        name: "Mailcraft",
        kind: "marketing email",
        entities: [
            Entity("campaign", "campaigns", &["name", "audience_ref", "send_at"]),
            Entity("audience", "audiences", &["name", "filter"]),
            Entity("email_template", "email_templates", &["name", "subject", "html"]),
            Entity("subscriber", "subscribers", &["email", "first_name", "is_confirmed"]),
            Entity("newsletter_send", "newsletter_sends", &["campaign_ref", "scheduled_at"]),
        ],
    },
    System {
        prefix: "signet",
        name: "Signet",
        kind: "e-signatures",
        entities: [
            Entity("envelope", "envelopes", &["title", "document_url", "sender_email"]),
            Entity("recipient", "recipients", &["envelope_ref", "email", "role"]),
            Entity("signing_request", "signing_requests", &["envelope_ref", "signer_email", "expires_at"]),
            Entity("audit_trail", "audit_trails", &["envelope_ref"]),
            Entity("brand", "brands", &["name", "logo_url"]),
        ],
    },
    System {
        prefix: "wikiwise",
        name: "Wikiwise",
        kind: "the internal wiki",
        entities: [
            Entity("page", "pages", &["title", "space_key", "body"]),
            Entity("space", "spaces", &["key", "name", "owner_email"]),
            Entity("attachment", "attachments", &["page_ref", "file_name"]),
            Entity("page_version", "page_versions", &["page_ref", "note"]),
            Entity("page_label", "page_labels", &["page_ref", "name"]),
        ],
    },
    System {
        prefix: "metricly",
        name: "Metricly",
        kind: "product analytics",
        entities: [
            Entity("dashboard", "dashboards", &["name", "owner_email"]),
            Entity("chart", "charts", &["dashboard_ref", "query", "kind"]),
            Entity("metric", "metrics", &["name", "event_name", "aggregation"]),
            Entity("alert_rule", "alert_rules", &["metric_ref", "threshold_count", "recipient_email"]),
            Entity("segment", "segments", &["name", "filter"]),
        ],
    },
    System {
        prefix: "statusboard",
        name: "Statusboard",
        kind: "the public status page",
        entities: [
            Entity("component", "components", &["name", "group"]),
            Entity("incident_report", "incident_reports", &["title", "impact", "message"]),
            Entity("maintenance_window", "maintenance_windows", &["title", "starts_at", "ends_at"]),
            Entity("status_subscriber", "status_subscribers", &["email", "component_ref"]),
            Entity("uptime_report", "uptime_reports", &["component_ref", "month"]),
        ],
    },
    System {
        prefix: "procuro",
        name: "Procuro",
        kind: "procurement",
        entities: [
            Entity("vendor", "vendors", &["name", "contact_email", "category"]),
            Entity("requisition", "requisitions", &["title", "requester_email", "amount_cents"]),
            Entity("contract", "contracts", &["vendor_ref", "starts_on", "ends_on"]),
            Entity("approval", "approvals", &["requisition_ref", "approver_email", "decision"]),
            Entity("budget", "budgets", &["department", "year", "amount_cents"]),
        ],
    },
    System {
        prefix: "learnly",
        name: "Learnly",
        kind: "staff training",
        entities: [
            Entity("course", "courses", &["title", "owner_email", "duration_minutes_count"]),
            Entity("enrollment", "enrollments", &["course_ref", "learner_email"]),
            Entity("quiz", "quizzes", &["course_ref", "title", "pass_mark_count"]),
            Entity("certificate", "certificates", &["course_ref", "learner_email"]),
            Entity("learning_path", "learning_paths", &["name", "course_refs"]),
        ],
    },
];

/// The verbs every entity gets, in the order tools are generated.
pub(crate) const VERBS: &[&str] = &["list", "get", "create", "update", "delete", "search", "archive", "export"];

/// Tools another system offers for what the backend's own tools do, and the one tool a task
/// asks for that no connected system has (an invoice): placed first, so every catalogue from
/// [`MIN`] on holds them.
const NEAR_MISSES: &[&str] = &[
    "deskflow_create_ticket",
    "deskflow_list_tickets",
    "deskflow_update_ticket",
    "deskflow_list_customers",
    "pipewise_list_accounts",
    "peoplebase_list_employees",
    "peoplebase_list_teams",
    "pagerline_list_responders",
    "chatter_create_message",
    "trackly_create_issue",
    "trackly_list_issues",
    "statusboard_create_incident_report",
    "ledgerly_create_invoice",
    "wikiwise_search_pages",
    "docuvault_search_documents",
];

/// One tool of an unconnected system.
#[derive(Debug, Clone)]
pub struct Foreign {
    pub tool: Tool,
    /// The system's name, for the "not connected" error.
    pub system: &'static str,
    pub kind: &'static str,
}

/// The words of a tool prefix (a system's name): the gate G5 bans them from task texts.
pub fn system_prefixes() -> impl Iterator<Item = &'static str> {
    SYSTEMS.iter().map(|s| s.prefix)
}

/// The names of the first `n` tools of other systems, in catalogue order (cheap: no schema is
/// built).
pub fn names(n: u32) -> impl Iterator<Item = &'static str> {
    order().iter().take(n.min(MAX) as usize).map(|slot| slot.name.as_str())
}

/// The first `n` tools of other systems (all [`MAX`] of them if `n` is larger), built fresh:
/// only these `n` definitions are made.
pub fn foreign(n: u32) -> Vec<Foreign> {
    order()
        .iter()
        .take(n.min(MAX) as usize)
        .map(|slot| {
            let system = &SYSTEMS[slot.system];
            Foreign { tool: tool(system, &system.entities[slot.entity], VERBS[slot.verb]), system: system.name, kind: system.kind }
        })
        .collect()
}

/// One place in the catalogue's order: which system, entity and verb, and the tool's name.
struct Slot {
    system: usize,
    entity: usize,
    verb: usize,
    name: String,
}

/// The fixed order of every tool of other systems, by name only (once per process).
fn order() -> &'static [Slot] {
    static ORDER: OnceLock<Vec<Slot>> = OnceLock::new();
    ORDER.get_or_init(|| {
        let mut slots: Vec<Slot> = Vec::with_capacity(MAX as usize);
        for (s, system) in SYSTEMS.iter().enumerate() {
            for (e, entity) in system.entities.iter().enumerate() {
                for (v, verb) in VERBS.iter().enumerate() {
                    slots.push(Slot { system: s, entity: e, verb: v, name: name(system, entity, verb) });
                }
            }
        }
        assert_eq!(slots.len(), MAX as usize, "20 systems × 5 entities × 8 verbs");
        let rank = |name: &str| -> (usize, [u8; 32]) {
            let near = NEAR_MISSES.iter().position(|n| *n == name).unwrap_or(NEAR_MISSES.len());
            (near, Sha256::digest(format!("{ORDER_SEED}:{name}")).into())
        };
        slots.sort_by_cached_key(|slot| rank(&slot.name));
        slots
    })
}

/// A tool's name: the system's prefix, the verb, the entity (plural for the verbs over many).
pub(crate) fn name(system: &System, entity: &Entity, verb: &str) -> String {
    let Entity(one, many, _) = *entity;
    let noun = if matches!(verb, "list" | "search" | "export") { many } else { one };
    format!("{}_{verb}_{noun}", system.prefix)
}

pub(crate) fn tool(system: &System, entity: &Entity, verb: &str) -> Tool {
    let Entity(one, many, fields) = *entity;
    let (s, m, sys, kind) = (words(one), words(many), system.name, system.kind);
    let (name, description, schema) = match verb {
        "list" => (
            name(system, entity, verb),
            format!("Lists {m} in {sys} ({kind}), newest first. Filter by status; page with limit and offset."),
            object(
                &[
                    ("status", string(&format!("Only {m} in this status."))),
                    ("limit", paging("Page size, 1–100 (default 25).")),
                    ("offset", paging("Rows to skip.")),
                ],
                &[],
            ),
        ),
        "get" => (name(system, entity, verb), format!("Gets one {s} from {sys} ({kind}) by its id."), object(&[("id", id(one))], &["id"])),
        "create" => (
            name(system, entity, verb),
            format!("Creates a {s} in {sys} ({kind})."),
            object(&fields.iter().map(|f| (*f, field(one, f))).collect::<Vec<_>>(), &fields[..1]),
        ),
        "update" => (
            name(system, entity, verb),
            format!("Updates a {s} in {sys} ({kind}); fields left out keep their value."),
            object(&std::iter::once(("id", id(one))).chain(fields.iter().map(|f| (*f, field(one, f)))).collect::<Vec<_>>(), &["id"]),
        ),
        "delete" => (name(system, entity, verb), format!("Deletes a {s} from {sys} ({kind}). This cannot be undone."), object(&[("id", id(one))], &["id"])),
        "search" => (
            name(system, entity, verb),
            format!("Full-text search over {m} in {sys} ({kind}), best match first."),
            object(&[("query", string("Words to look for.")), ("limit", paging("How many results, 1–50 (default 10)."))], &["query"]),
        ),
        "archive" => (
            name(system, entity, verb),
            format!("Archives a {s} in {sys} ({kind}): it leaves every list but can be restored."),
            object(&[("id", id(one)), ("reason", string("Why, for the audit log."))], &["id"]),
        ),
        "export" => (
            name(system, entity, verb),
            format!("Exports {m} from {sys} ({kind}) as a CSV or JSON file and returns its download link."),
            object(
                &[
                    ("format", json!({"type": "string", "enum": ["csv", "json"], "description": "File format."})),
                    ("since", string("Only rows changed on or after this date (YYYY-MM-DD).")),
                ],
                &["format"],
            ),
        ),
        other => unreachable!("no verb {other}"),
    };
    Tool::new(name, description, Arc::new(schema))
}

fn words(snake: &str) -> String {
    snake.replace('_', " ")
}

fn object(properties: &[(&str, Value)], required: &[&str]) -> Map<String, Value> {
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()));
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    schema.insert("additionalProperties".into(), false.into());
    schema
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn paging(description: &str) -> Value {
    json!({"type": "integer", "description": description})
}

fn id(entity: &str) -> Value {
    string(&format!("The {}'s id.", words(entity)))
}

/// A field's schema, its type read from its name.
fn field(entity: &str, name: &str) -> Value {
    let what = format!("The {}'s {}.", words(entity), words(name.trim_end_matches("_count").trim_end_matches("_cents")));
    if name.ends_with("_count") || name == "score" || name == "year" {
        paging(&what)
    } else if name.ends_with("_cents") {
        paging(&format!("{} In cents.", what))
    } else if name.starts_with("is_") {
        json!({"type": "boolean", "description": what})
    } else if name.ends_with("_emails") || name.ends_with("_refs") || name == "actions" {
        json!({"type": "array", "items": {"type": "string"}, "description": what})
    } else if name.ends_with("_date") || name.ends_with("_on") {
        string(&format!("{} YYYY-MM-DD.", what))
    } else if name.ends_with("_at") {
        string(&format!("{} An RFC 3339 time.", what))
    } else {
        string(&what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogues_are_nested_unique_and_lead_with_the_near_misses() {
        let all = foreign(MAX);
        let unique: std::collections::BTreeSet<&str> = all.iter().map(|f| f.tool.name.as_ref()).collect();
        assert_eq!(unique.len(), MAX as usize, "every name is unique");
        let first: Vec<&str> = names(NEAR_MISSES.len() as u32).collect();
        assert_eq!(first, NEAR_MISSES, "the near-misses come first, in their order");
        let built: Vec<String> = all.iter().map(|f| f.tool.name.to_string()).collect();
        assert_eq!(built, names(MAX).collect::<Vec<_>>(), "a tool is built under the name its slot holds");
        for pair in LEVELS.windows(2) {
            let (small, large) = (foreign(pair[0]), foreign(pair[1]));
            assert!(small.iter().zip(&large).all(|(a, b)| a.tool.name == b.tool.name), "{} is a prefix of {}", pair[0], pair[1]);
        }
        assert_eq!(foreign(5000).len(), MAX as usize);
        // The order after the near-misses mixes systems: the first 100 tools are not one system's.
        let hundred = foreign(100);
        let systems: std::collections::BTreeSet<&str> = hundred.iter().map(|f| f.system).collect();
        assert!(systems.len() >= 15, "{systems:?}");
    }

    #[test]
    fn every_schema_names_its_required_fields_among_its_properties() {
        for f in foreign(MAX) {
            let schema = &*f.tool.input_schema;
            let properties = schema["properties"].as_object().unwrap();
            assert!(!properties.is_empty(), "{}", f.tool.name);
            for r in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
                assert!(properties.contains_key(r.as_str().unwrap()), "{}: {r}", f.tool.name);
            }
            assert!(f.tool.description.as_deref().is_some_and(|d| d.contains(f.system)), "{}", f.tool.name);
        }
    }
}
