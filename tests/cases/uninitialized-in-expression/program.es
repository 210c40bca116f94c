in long SetX, long SetY, {} Get
out long Next

( SetX(x) | SetY(y) | Get() { !>Next(x + y + 1); } )*
