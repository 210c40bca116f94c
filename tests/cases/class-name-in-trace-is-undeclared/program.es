in double Temperature
  case { Temperature >= 100.0 ? High : Low }
out double FilteredTemperature

( High(x) { !>FilteredTemperature(x); } | Low() )*
