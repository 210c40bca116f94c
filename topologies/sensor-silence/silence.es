// Stage 2 of sensor averaging with silence detection (document section 4.3's time-out), re-grouped
// by site: when no Average comes from any sensor of a site for 10 minutes, raise SiteSilent (with
// the time of the last Average); when one comes again, raise SiteBack.

in {string site; string sensor; double average;} Average
   group(Average.site)

out {string site; time lastAverage;} SiteSilent,
    {string site; string sensor;} SiteBack

// a fixed set of sites, each watched for good: eventscript: allow never-ends
{ last = now(); }
(
  ( Average() { last = now(); } )*
  elapse[10 minutes]() { !>SiteSilent({site: group[0], lastAverage: last}); }
  Average(a) { last = now(); !>SiteBack({site: group[0], sensor: a.sensor}); }
)*
