-- Fernhill Veterinary: a veterinary group with 67 tickets, dated in January like the rest of the
-- seeded world. Assignees are story users (ids 1–7 at every scale): Priya Raman (1, payments),
-- Marcus Chen (2, platform), Sofia Alvarez (3, support), Jonas Weber (4, platform), Aisha Bello
-- (5, checkout), Tom Fischer (6, support), Lena Novak (7, identity).
-- Unfinished (open or in progress): support 13, platform 9, payments 6, checkout 4, identity 3,
-- nobody 11 (46). Finished (resolved or closed): identity 14, payments 3, support 2, nobody 2, so
-- that over all tickets identity (17) would lead support (15).
INSERT INTO customers (name, tier, region, contact_email, created_at)
VALUES ('Fernhill Veterinary', 'enterprise', 'eu-west', 'it@fernhill-vets.example', '2025-04-22 09:00:00+00');
WITH spec (k, assignee_id, status, priority, n) AS (VALUES
    (1, 3, 'open', 'high', 4), (2, 3, 'in_progress', 'medium', 3),
    (3, 6, 'open', 'medium', 3), (4, 6, 'in_progress', 'low', 3),
    (5, 2, 'open', 'urgent', 3), (6, 2, 'in_progress', 'medium', 2),
    (7, 4, 'open', 'low', 2), (8, 4, 'in_progress', 'high', 2),
    (9, 1, 'open', 'medium', 4), (10, 1, 'in_progress', 'high', 2),
    (11, 5, 'open', 'low', 2), (12, 5, 'in_progress', 'medium', 2),
    (13, 7, 'open', 'high', 1), (14, 7, 'in_progress', 'medium', 2),
    (15, NULL, 'open', 'medium', 8), (16, NULL, 'open', 'urgent', 3),
    (17, 7, 'resolved', 'medium', 8), (18, 7, 'closed', 'low', 6),
    (19, 1, 'resolved', 'medium', 3), (20, 3, 'closed', 'low', 2), (21, NULL, 'closed', 'low', 2)
), rows AS (
    SELECT s.assignee_id, s.status, s.priority, (row_number() OVER (ORDER BY s.k, g) - 1)::int AS r
    FROM spec s CROSS JOIN LATERAL generate_series(1, s.n) AS g
)
INSERT INTO tickets (title, description, status, priority, customer_id, assignee_id, created_at, updated_at)
SELECT
    (ARRAY['Appointment reminders not sent', 'Vaccination records missing', 'Lab results arrive late',
           'Invoice shows the wrong clinic', 'Pet owner portal login fails', 'Prescription labels misprinted',
           'Boarding calendar double-books kennels', 'Card terminal disconnects', 'Stock levels not updating',
           'X-ray images fail to upload', 'Referral letters lose attachments', 'SMS opt-out ignored',
           'Insurance claim export rejected'])[r % 13 + 1]
        || ' (' || (ARRAY['Fernhill Central', 'Fernhill North', 'Fernhill Riverside', 'Fernhill Market', 'Fernhill Park', 'Fernhill Hillside'])[r / 13 + 1] || ')',
    'Reported by the practice manager at the clinic; staff are working around it for now.',
    rows.status, rows.priority, (SELECT id FROM customers WHERE name = 'Fernhill Veterinary'), rows.assignee_id,
    '2026-01-07 08:00:00+00'::timestamptz + r * interval '1 hour',
    '2026-01-07 08:00:00+00'::timestamptz + r * interval '1 hour'
FROM rows;
