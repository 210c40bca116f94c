in double Temperature case { Temperature >= 100.0 ? High : Low }
out long Count

{ n = 0; }
( High() . { n = n + 1; !>Count(n); } | Low() )*
