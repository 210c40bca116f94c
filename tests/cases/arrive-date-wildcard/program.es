out time Billing

( arrive[2026-.-15 08:00](t) { !>Billing(t); } )*
