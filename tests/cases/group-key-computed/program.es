in long Reading group(Reading / 10)
out long Count

{ n = 0; }
( Reading() { n = n + 1; !>Count(n); } )*
