in long K case { K > 0 ? Pos : K < 0 ? Neg : Zero }
out long O

( Pos(p) { !>O(p); } | Neg(n) { !>O(n); } )*
