out {} StartOfMinute, {} StartOfHour

( arrive[.:00](t)
  { minute(t)==0 ? !>StartOfHour({}); : !>StartOfMinute({}); }
)*
