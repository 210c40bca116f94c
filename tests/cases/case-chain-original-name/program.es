in double Temperature
  case { Temperature < 0.0 ? Freezing
       : Temperature < 30.0 ? Mild
       : Hot
       }
out string Kind, double Next

( ( Freezing() { !>Kind("freezing"); }
  | Mild() { !>Kind("mild"); }
  | Hot() { !>Kind("hot"); }
  )
  Temperature(t) { !>Next(t); }
)*
