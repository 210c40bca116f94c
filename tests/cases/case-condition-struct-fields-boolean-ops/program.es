in {string zone; double temp; boolean alarm;} Report
  case { Report.alarm || Report.temp > 50.0 && Report.zone != "lab" ? Urgent
       : Report.temp < 0.0 ? Cold
       : Normal }
out string U, string C, long N

{ n = 0; }
( Urgent(r) { !>U(r.zone); }
| Cold(r) { !>C(r.zone); }
| Normal() { n = n + 1; !>N(n); }
)*
