-- Quarry Works and its {{ n }} ticket(s), dated in January like the seeded world; the one that
-- mentions a gateway timeout sits in the middle of the list.
INSERT INTO customers (name, tier, region, contact_email, created_at)
VALUES ('Quarry Works', 'free', 'us-east', 'office@quarry-works.example', '2025-08-14 09:00:00+00');
INSERT INTO tickets (title, description, status, priority, customer_id, assignee_id, created_at, updated_at)
SELECT
    CASE WHEN g = {{ (n + 1) // 2 }} THEN 'Conveyor telemetry stalls on refresh' ELSE 'Site report ' || g || ' shows stale readings' END,
    CASE WHEN g = {{ (n + 1) // 2 }} THEN 'Every refresh ends in a gateway timeout after about 30 seconds; the site office cannot see the belt status.'
         ELSE 'The site office sees readings from the previous shift; reloading the page does not help.' END,
    'open', 'medium', (SELECT id FROM customers WHERE name = 'Quarry Works'), NULL,
    '2026-01-10 07:00:00+00'::timestamptz + g * interval '1 minute',
    '2026-01-10 07:00:00+00'::timestamptz + g * interval '1 minute'
FROM generate_series(1, {{ n }}) AS g;
