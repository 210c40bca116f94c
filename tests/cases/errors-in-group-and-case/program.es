in long Reading
  group(100 / Reading)
  case { 10 / Reading > 1 ? Big : Small }
out string Kind

( Big() { !>Kind("big"); } | Small() { !>Kind("small"); } )*
