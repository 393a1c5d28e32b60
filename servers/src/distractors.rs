//! Distractors: the tools of other servers a user's client lists beside the arm's. Real agents
//! never meet a server alone — the client lists the tools of every server its user installed —
//! so a run can add `N` tools of other, unrelated systems to what both arms offer: the same `N`
//! tools, in the same order, for the control and the pattern. The arm's server never sees them;
//! the client (the agent) answers a call to one with the refusal such a server gives a workspace
//! it does not serve.
//!
//! The tools come from the generator of tool_search's catalogue (the same verbs, descriptions
//! and argument schemas), grown by [`SYSTEMS`] of its own: none of them is in any catalogue a
//! tool_search server lists, and none does what the backend does (no tickets, customers,
//! services, deploys, runbooks, reviews or notifications), so a distractor is irrelevant to every
//! task, never a near-miss. Which `N`: systems in an order drawn from a sha256 of
//! [`ORDER_SEED`], each system's tools in an order drawn the same way; the first `N` of that
//! sequence, so a larger draw holds every smaller one (levels of a sweep are nested).
//!
//! How they are listed: as a client lists the servers it is connected to, one server's tools
//! after another. The arm is one of those servers, placed at the server boundary nearest to half
//! of the distractors (the earlier on a tie): as many distractors before its tools as after,
//! within one server, in both arms.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::modules::tool_search::catalogue::{self, Entity, System, VERBS};

/// Fixes the order of systems and of each system's tools (changing it changes every draw).
pub const ORDER_SEED: &str = "distractors 1";

/// How many distractors there are to draw: [`SYSTEMS`] × 5 entities × 8 verbs.
pub const MAX: u32 = 600;

/// The levels the committed sweeps use.
pub const LEVELS: &[u32] = &[0, 10, 50, 200];

/// The systems distractors come from: what a company connects besides the backend, none of it
/// doing what the backend does.
const SYSTEMS: &[System] = &[
    System {
        prefix: "fleetwise",
        name: "Fleetwise",
        kind: "company vehicle fleet management",
        entities: [
            Entity("vehicle", "vehicles", &["plate_number", "model", "depot"]),
            Entity("driver", "drivers", &["full_name", "licence_number", "depot"]),
            Entity("trip", "trips", &["vehicle_ref", "driver_email", "started_at"]),
            Entity("fuel_log", "fuel_logs", &["vehicle_ref", "litres_count", "filled_on"]),
            Entity("maintenance_visit", "maintenance_visits", &["vehicle_ref", "garage", "due_date"]),
        ],
    },
    System {
        prefix: "hireloop",
        name: "Hireloop",
        kind: "recruiting and applicant tracking",
        entities: [
            Entity("candidate", "candidates", &["full_name", "email", "source"]),
            Entity("job_opening", "job_openings", &["title", "department", "hiring_manager_email"]),
            Entity("interview", "interviews", &["candidate_ref", "interviewer_email", "starts_at"]),
            Entity("offer_letter", "offer_letters", &["candidate_ref", "salary_cents", "start_date"]),
            Entity("referral", "referrals", &["candidate_ref", "referrer_email"]),
        ],
    },
    System {
        prefix: "roomly",
        name: "Roomly",
        kind: "office facilities and desk booking",
        entities: [
            Entity("desk_booking", "desk_bookings", &["desk_code", "booker_email", "booked_on"]),
            Entity("visitor", "visitors", &["full_name", "host_email", "arrives_at"]),
            Entity("parking_space", "parking_spaces", &["code", "level", "is_reserved"]),
            Entity("building", "buildings", &["name", "city", "floors_count"]),
            Entity("cleaning_request", "cleaning_requests", &["room_code", "details", "due_date"]),
        ],
    },
    System {
        prefix: "tripnest",
        name: "Tripnest",
        kind: "business travel booking",
        entities: [
            Entity("itinerary", "itineraries", &["traveller_email", "purpose", "starts_on"]),
            Entity("flight_booking", "flight_bookings", &["itinerary_ref", "flight_number", "departs_at"]),
            Entity("hotel_booking", "hotel_bookings", &["itinerary_ref", "hotel_name", "check_in_on"]),
            Entity("traveller", "travellers", &["full_name", "email", "passport_country"]),
            Entity("travel_policy", "travel_policies", &["name", "max_nightly_rate_cents"]),
        ],
    },
    System {
        prefix: "campaigna",
        name: "Campaigna",
        kind: "email marketing",
        entities: [
            Entity("campaign", "campaigns", &["name", "audience_ref", "send_at"]),
            Entity("audience", "audiences", &["name", "filter"]),
            Entity("email_template", "email_templates", &["name", "subject", "html"]),
            Entity("subscriber", "subscribers", &["email", "first_name", "is_opted_in"]),
            Entity("unsubscribe", "unsubscribes", &["email", "reason"]),
        ],
    },
    System {
        prefix: "postwise",
        name: "Postwise",
        kind: "social media scheduling",
        entities: [
            Entity("scheduled_post", "scheduled_posts", &["channel_handle", "text", "publish_at"]),
            Entity("social_account", "social_accounts", &["handle", "network"]),
            Entity("media_asset", "media_assets", &["file_name", "alt_text"]),
            Entity("hashtag_set", "hashtag_sets", &["name", "hashtags"]),
            Entity("engagement_report", "engagement_reports", &["social_account_ref", "period"]),
        ],
    },
    System {
        prefix: "contractly",
        name: "Contractly",
        kind: "contract management and e-signature",
        entities: [
            Entity("contract", "contracts", &["title", "counterparty_ref", "value_cents"]),
            Entity("counterparty", "counterparties", &["legal_name", "country", "contact_email"]),
            Entity("clause", "clauses", &["title", "text", "is_standard"]),
            Entity("signature_request", "signature_requests", &["contract_ref", "signer_email"]),
            Entity("renewal", "renewals", &["contract_ref", "renews_on", "notice_days_count"]),
        ],
    },
    System {
        prefix: "assetry",
        name: "Assetry",
        kind: "IT hardware and licence tracking",
        entities: [
            Entity("hardware_asset", "hardware_assets", &["asset_tag", "model", "holder_email"]),
            Entity("software_licence", "software_licences", &["product", "seats_count", "expires_on"]),
            Entity("asset_assignment", "asset_assignments", &["asset_tag", "holder_email", "assigned_on"]),
            Entity("warranty", "warranties", &["asset_tag", "vendor", "ends_on"]),
            Entity("disposal_record", "disposal_records", &["asset_tag", "method", "disposed_on"]),
        ],
    },
    System {
        prefix: "formly",
        name: "Formly",
        kind: "forms and surveys",
        entities: [
            Entity("form", "forms", &["title", "owner_email", "is_anonymous"]),
            Entity("form_response", "form_responses", &["form_ref", "respondent_email"]),
            Entity("question", "questions", &["form_ref", "prompt", "is_required"]),
            Entity("survey_invite", "survey_invites", &["form_ref", "invitee_emails"]),
            Entity("poll", "polls", &["question_text", "options", "closes_at"]),
        ],
    },
    System {
        prefix: "brandbox",
        name: "Brandbox",
        kind: "brand and design assets",
        entities: [
            Entity("brand_asset", "brand_assets", &["name", "file_name", "usage_notes"]),
            Entity("asset_collection", "asset_collections", &["name", "owner_email"]),
            Entity("style_guide", "style_guides", &["name", "version"]),
            Entity("font_licence", "font_licences", &["family", "seats_count", "expires_on"]),
            Entity("colour_palette", "colour_palettes", &["name", "hex_codes"]),
        ],
    },
    System {
        prefix: "eventra",
        name: "Eventra",
        kind: "conference and event management",
        entities: [
            Entity("venue", "venues", &["name", "city", "capacity_count"]),
            Entity("attendee", "attendees", &["full_name", "email", "company"]),
            Entity("agenda_slot", "agenda_slots", &["title", "speaker_email", "starts_at"]),
            Entity("sponsor", "sponsors", &["company", "tier", "contact_email"]),
            Entity("badge", "badges", &["attendee_ref", "badge_type"]),
        ],
    },
    System {
        prefix: "givewell",
        name: "Givewell",
        kind: "the company's charity matching programme",
        entities: [
            Entity("donor", "donors", &["full_name", "email", "employee_number"]),
            Entity("donation", "donations", &["donor_ref", "charity_ref", "amount_cents"]),
            Entity("charity", "charities", &["name", "registration_number", "country"]),
            Entity("matching_rule", "matching_rules", &["name", "match_percent_count", "cap_cents"]),
            Entity("pledge", "pledges", &["donor_ref", "amount_cents", "pledged_on"]),
        ],
    },
    System {
        prefix: "labtrack",
        name: "Labtrack",
        kind: "the research lab's sample tracking",
        entities: [
            Entity("sample", "samples", &["barcode", "sample_type", "collected_on"]),
            Entity("experiment", "experiments", &["title", "lead_email", "started_on"]),
            Entity("instrument", "instruments", &["name", "room_code", "calibrated_on"]),
            Entity("reagent", "reagents", &["name", "lot_number", "expires_on"]),
            Entity("notebook_entry", "notebook_entries", &["experiment_ref", "body"]),
        ],
    },
    System {
        prefix: "canteeno",
        name: "Canteeno",
        kind: "the staff canteen and catering",
        entities: [
            Entity("menu", "menus", &["name", "served_on"]),
            Entity("meal_order", "meal_orders", &["menu_ref", "diner_email", "quantity_count"]),
            Entity("dish", "dishes", &["name", "allergens", "price_cents"]),
            Entity("dietary_preference", "dietary_preferences", &["diner_email", "diet"]),
            Entity("catering_order", "catering_orders", &["event_name", "headcount_count", "deliver_at"]),
        ],
    },
    System {
        prefix: "counselo",
        name: "Counselo",
        kind: "the legal team's matter management",
        entities: [
            Entity("matter", "matters", &["title", "practice_area", "lead_counsel_email"]),
            Entity("legal_hold", "legal_holds", &["matter_ref", "custodian_emails"]),
            Entity("filing_deadline", "filing_deadlines", &["matter_ref", "court", "due_date"]),
            Entity("outside_counsel", "outside_counsels", &["firm_name", "contact_email"]),
            Entity("time_entry", "time_entries", &["matter_ref", "minutes_count", "worked_on"]),
        ],
    },
];

/// One distractor: the tool a client lists, and the system whose server it comes from.
#[derive(Debug, Clone)]
pub struct Distractor {
    pub tool: Tool,
    pub system: &'static str,
    pub kind: &'static str,
}

/// The distractors of a run: the tools, in listing order, and where the arm's own tools go.
/// Their definitions and hash are made once, at the draw: every session lists them and every
/// fingerprint names the hash. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Distractors {
    tools: Arc<Vec<Distractor>>,
    /// The tools' function definitions, in listing order.
    definitions: Arc<Vec<Value>>,
    /// How many distractors are listed before the arm's tools (a server boundary).
    before_arm: usize,
    /// See [`Self::sha256`].
    sha256: Option<String>,
}

impl Distractors {
    /// No distractors: the arm's tools alone (every run before distractors, and `--distractors 0`).
    pub fn none() -> Self {
        Self::default()
    }

    /// The first `n` distractors; `Err` names the largest draw when `n` is larger.
    pub fn draw(n: u32) -> Result<Self, String> {
        if n > MAX {
            return Err(format!("--distractors {n}: there are {MAX} tools of other systems to draw from; choose at most {MAX}"));
        }
        let mut tools = Vec::with_capacity(n as usize);
        let mut boundaries = vec![0usize];
        'systems: for system in systems_in_order() {
            for (entity, verb) in tools_in_order(system) {
                if tools.len() == n as usize {
                    break 'systems;
                }
                tools.push(Distractor { tool: catalogue::tool(system, entity, verb), system: system.name, kind: system.kind });
            }
            boundaries.push(tools.len());
        }
        boundaries.dedup();
        let half = tools.len() as f64 / 2.0;
        // Nearest to half; `min_by` keeps the first of equals, the earlier boundary.
        let before_arm = boundaries.iter().copied().min_by(|a, b| (*a as f64 - half).abs().total_cmp(&(*b as f64 - half).abs())).unwrap_or(0);
        let definitions: Vec<Value> = tools.iter().map(|d| crate::offered::function_definition(&d.tool)).collect();
        let sha256 = (!tools.is_empty()).then(|| {
            let text = serde_json::json!({ "definitions": definitions, "before_arm": before_arm }).to_string();
            hex::encode(Sha256::digest(text.as_bytes()))
        });
        Ok(Self { tools: Arc::new(tools), definitions: Arc::new(definitions), before_arm, sha256 })
    }

    pub fn len(&self) -> u32 {
        self.tools.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The distractors' names, in listing order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|d| d.tool.name.as_ref())
    }

    /// Whether `name` is one of them.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.iter().any(|d| d.tool.name == name)
    }

    /// How many are listed before the arm's own tools.
    pub fn before_arm(&self) -> usize {
        self.before_arm
    }

    /// The distractors' function definitions, as a model is offered them, in listing order.
    pub fn definitions(&self) -> &[Value] {
        &self.definitions
    }

    /// `arm` (the arm's own definitions, in its order) with the distractors listed around it:
    /// the order a model is offered. With no distractors, `arm` unchanged.
    pub fn around(&self, arm: Vec<Value>) -> Vec<Value> {
        if self.is_empty() {
            return arm;
        }
        let (before, after) = self.definitions.split_at(self.before_arm);
        before.iter().cloned().chain(arm).chain(after.iter().cloned()).collect()
    }

    /// What a call to distractor `name` answers (a tool error), or `None` when `name` is not one.
    pub fn refusal(&self, name: &str) -> Option<String> {
        let d = self.tools.iter().find(|d| d.tool.name == name)?;
        Some(format!("{} ({}) refused the call: this workspace has no access to {}. Nothing was done.", d.system, d.kind, d.tool.name))
    }

    /// sha256 of the definitions as offered (JSON, in listing order) and the arm's place among
    /// them; `None` with no distractors. Two runs with the same hash listed the same distractors
    /// in the same place.
    pub fn sha256(&self) -> Option<String> {
        self.sha256.clone()
    }
}

/// The names a task's text may not use, whatever the run's level: every distractor's name and
/// every distractor system's (gate G5).
pub fn banned_names() -> impl Iterator<Item = String> {
    SYSTEMS
        .iter()
        .flat_map(|s| std::iter::once(s.prefix.to_owned()).chain(s.entities.iter().flat_map(move |e| VERBS.iter().map(move |v| catalogue::name(s, e, v)))))
}

fn rank(key: &str) -> [u8; 32] {
    Sha256::digest(format!("{ORDER_SEED}:{key}")).into()
}

fn systems_in_order() -> Vec<&'static System> {
    let mut systems: Vec<&System> = SYSTEMS.iter().collect();
    systems.sort_by_cached_key(|s| rank(s.prefix));
    systems
}

fn tools_in_order(system: &'static System) -> Vec<(&'static Entity, &'static str)> {
    let mut tools: Vec<(&Entity, &str)> = system.entities.iter().flat_map(|e| VERBS.iter().map(move |v| (e, *v))).collect();
    tools.sort_by_cached_key(|(e, v)| rank(&catalogue::name(system, e, v)));
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_nested_unique_and_refuse_past_the_pool() {
        let all = Distractors::draw(MAX).unwrap();
        let names: Vec<&str> = all.names().collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), MAX as usize, "every distractor's name is unique");
        for n in [1, 10, 39, 40, 41, 50, 200, 599] {
            let d = Distractors::draw(n).unwrap();
            assert_eq!(d.len(), n);
            assert_eq!(d.names().collect::<Vec<_>>(), names[..n as usize], "a draw of {n} is the first {n} of the largest");
        }
        let e = Distractors::draw(MAX + 1).unwrap_err();
        assert!(e.contains(&format!("--distractors {}", MAX + 1)) && e.contains(&MAX.to_string()), "{e}");
        assert_eq!(banned_names().count(), MAX as usize + SYSTEMS.len());
    }

    #[test]
    fn no_distractor_is_in_a_tool_search_catalogue_or_names_a_backend_entity() {
        let catalogue: std::collections::BTreeSet<&str> = catalogue::names(catalogue::MAX).collect();
        let prefixes: Vec<&str> = catalogue::system_prefixes().collect();
        let backend = ["ticket", "customer", "service", "deploy", "runbook", "review", "notification", "change", "repo", "incident", "comment", "user"];
        for d in Distractors::draw(MAX).unwrap().tools.iter() {
            let name = d.tool.name.as_ref();
            assert!(!catalogue.contains(name), "{name} is in tool_search's catalogue");
            assert!(!prefixes.iter().any(|p| name.starts_with(&format!("{p}_"))), "{name} is a catalogue system's");
            let words: Vec<&str> = name.split('_').collect();
            assert!(!backend.iter().any(|b| words.iter().any(|w| w.trim_end_matches('s') == *b)), "{name} names what the backend does");
        }
    }

    #[test]
    fn the_arm_sits_at_the_server_boundary_nearest_half_and_the_hash_pins_the_listing() {
        let arm = vec![serde_json::json!({"function": {"name": "arm_tool"}})];
        assert_eq!(Distractors::none().around(arm.clone()), arm, "no distractors: the arm's list unchanged");
        assert_eq!(Distractors::none().sha256(), None);
        // One system's 40 tools: the arm goes before them (0 and 40 are equally near 20: the earlier).
        let d = Distractors::draw(40).unwrap();
        assert_eq!(d.before_arm(), 0);
        // 100 tools are systems of 40, 40 and 20: boundaries 0, 40, 80, 100; nearest 50 is 40.
        let d = Distractors::draw(100).unwrap();
        assert_eq!(d.before_arm(), 40);
        let listed = d.around(arm.clone());
        assert_eq!(listed.len(), 101);
        assert_eq!(listed[40]["function"]["name"], "arm_tool");
        let systems: std::collections::BTreeSet<&str> = d.tools[..40].iter().map(|t| t.system).collect();
        assert_eq!(systems.len(), 1, "a server's tools are listed together");
        assert_ne!(d.sha256(), Distractors::draw(99).unwrap().sha256());
        assert_eq!(d.sha256(), Distractors::draw(100).unwrap().sha256(), "the draw is reproducible");
        let refusal = d.refusal(d.names().next().unwrap()).unwrap();
        assert!(refusal.contains("no access") && refusal.contains(d.tools[0].system), "{refusal}");
        assert_eq!(d.refusal("arm_tool"), None);
    }
}
