// Stage 1 of the sensors pipeline: one instance per sensor.
// Three hot readings in a row (80 °C or more) raise Overheat with the peak of the three;
// the first normal reading after that raises Recovered. A sensor that stays quiet for an hour
// between episodes is forgotten (its instance ends), so the set of sensors may be open-ended.

in {string site; string sensor; double celsius;} Reading
   group(Reading.sensor)
   case { Reading.celsius >= 80.0 ? Hot : Normal }

out {string site; string sensor; double peak;} Overheat,
    {string site; string sensor;} Recovered

(
  Normal()*
  Hot(a)
  ( Normal()
  | Hot(b)
    ( Normal()
    | Hot(c)
      { !>Overheat({site: c.site, sensor: group[0],
                    peak: max(a.celsius, max(b.celsius, c.celsius))}); }
      Hot()*
      Normal(n) { !>Recovered({site: n.site, sensor: group[0]}); }
    )
  )
)*
elapse[1 hour]()
