in {string k; long v;} Add group(Add.k),
   string Noise group(Noise),
   string Done group(Done)
out long Sum

{ s = 0; }
( Add(a) { s = s + a.v; } )*
Done() { !>Sum(s); }
