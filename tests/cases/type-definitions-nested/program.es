type Point = {double x; double y;}
type Polygon = Point[]
in {string name; Polygon boundary;} SetZone
out {string name; {double x; double y;}[] boundary;} Zone, Point First

( SetZone(z) { !>Zone(z); !>First(z.boundary[0]); } )*
