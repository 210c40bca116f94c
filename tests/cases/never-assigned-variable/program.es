in {} Get
out long Value

( Get() { !>Value(x); } )*
