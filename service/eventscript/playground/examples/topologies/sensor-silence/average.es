// Stage 1 of sensor averaging with silence detection (document section 4.2's bundle average),
// one instance per sensor: every three readings give an Average. A sensor with no reading for an
// hour is forgotten (the instance ends; its next reading starts a fresh bundle).

in {string site; string sensor; double value;} Reading
   group(Reading.sensor)

out {string site; string sensor; double average;} Average

{ sum = 0.0; n = 0; }
(
  Reading(r)
  { sum = sum + r.value;
    n = n + 1;
    n == 3 ? { !>Average({site: r.site, sensor: group[0], average: sum / 3.0}); sum = 0.0; n = 0; }
  }
)*
elapse[1 hour]()
