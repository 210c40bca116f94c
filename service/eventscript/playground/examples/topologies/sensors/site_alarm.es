// Stage 2 of the sensors pipeline: one instance per site.
// When a second sensor of a site overheats within 15 minutes of the first, raise SiteAlarm
// naming both. A site with no news for a day is forgotten.

in {string site; string sensor; double peak;} Overheat group(Overheat.site),
   {string site; string sensor;} Recovered group(Recovered.site)

out {string site; string first; string second; double peak;} SiteAlarm

{ first = ""; peak = 0.0; until = now(); }
(
  Recovered()
| Overheat(o)
  { o.sensor != first && now() < until ?
      { !>SiteAlarm({site: group[0], first: first, second: o.sensor, peak: max(peak, o.peak)});
        until = now();
      }
    : { first = o.sensor; peak = o.peak; until = minutesAfter(15, now()); }
  }
)*
elapse[1 day]()
