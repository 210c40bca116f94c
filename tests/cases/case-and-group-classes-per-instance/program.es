in {string id; double v;} R
  group(R.id)
  case { R.v >= 10.0 ? Hi : Lo }
out string Alarm

( Lo()* Hi() Hi() { !>Alarm(group[0]); } )*
