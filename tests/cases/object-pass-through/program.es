in {string id; object payload;} In
out object Out

( In(v) { !>Out(v.payload); } )*
