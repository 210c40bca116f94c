type Msg = {string type; long in;}
in Msg R
  group(R.type)
  case { R.in > 0 ? Pos : Neg }
out {string type; long new;} O

( Pos(p) { !>O({type: p.type, new: p.in}); }
| Neg(n) { n.in = 0; !>O({new: n.in, type: n.type}); }
)*
