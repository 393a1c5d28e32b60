-- Tom Fischer's (user 6) open tickets for Initech Payments (customer 6), dated in January like
-- the rest of the seeded world.
INSERT INTO tickets (title, description, status, priority, customer_id, assignee_id, created_at, updated_at) VALUES
{% for i in range(n) %}
    ({{ "'" ~ vars.titles[i] ~ "'" }}, 'Reported by the Initech Payments finance team.', 'open', 'medium', 6, 6, '2026-01-20 09:00:00+00'::timestamptz + interval '{{ i }} minutes', '2026-01-20 09:00:00+00'::timestamptz + interval '{{ i }} minutes'){{ "," if not loop.last else ";" }}
{% endfor %}
