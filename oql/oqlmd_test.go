package oql

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The rows of ../shared/spec/oql.md, one or more per feature, over a small
// dataset of orders with missing members, nulls, empty and null item
// lists. Each row runs twice: over the whole data, and as a partitioned
// region runs it (partials over three shards of /orders, sent through the
// wire encoding, merged). Both must give the row's answer.

var mdData = mapSource{
	"/orders": {
		"1001": `{"@type":"Order","purchaseOrderNo":1001,"customerId":2001,"description":"Rush order","contact":"Ann Lee","email":"ann@x.org","phone":"555-0101","totalPrice":4131.0,"orderDate":"01/31/2024","items":[{"itemId":1,"price":10.5,"quantity":2},{"itemId":2,"price":3,"quantity":1}],"address":{"city":"Oslo"},"tags":["vip","new"]}`,
		"1002": `{"@type":"Order","purchaseOrderNo":1002,"customerId":2002,"description":"Walk In","contact":"bob","email":null,"phone":"555-0102","totalPrice":250.5,"items":[],"address":{"city":"Bergen"}}`,
		"1003": `{"@type":"Order","purchaseOrderNo":1003,"customerId":2001,"description":"Rush delivery 50%_off","contact":null,"totalPrice":99,"items":null}`,
		"1004": `{"purchaseOrderNo":1004,"customerId":2003,"description":"Small","contact":"Walk In","email":"d@x.org","totalPrice":10.25,"items":[{"itemId":3,"price":7,"quantity":4}]}`,
		"1005": `{"@type":"Order","purchaseOrderNo":1005,"customerId":2003,"contact":"ann lee","totalPrice":5,"items":[{"itemId":1,"price":10.5,"quantity":1}],"flag":true}`,
	},
	"/customers": {
		"2001": `{"customerId":2001,"name":"Ann","tags":["vip"]}`,
		"2002": `{"customerId":2002,"name":"Bob","tags":[]}`,
		"2003": `{"customerId":2003,"name":"Cy"}`,
	},
	"/empty": {},
}

const (
	o1001 = `{"@type":"Order","purchaseOrderNo":1001,"customerId":2001,"description":"Rush order","contact":"Ann Lee","email":"ann@x.org","phone":"555-0101","totalPrice":4131.0,"orderDate":"01/31/2024","items":[{"itemId":1,"price":10.5,"quantity":2},{"itemId":2,"price":3,"quantity":1}],"address":{"city":"Oslo"},"tags":["vip","new"],"type-class":"Order"}`
	o1002 = `{"@type":"Order","purchaseOrderNo":1002,"customerId":2002,"description":"Walk In","contact":"bob","email":null,"phone":"555-0102","totalPrice":250.5,"items":[],"address":{"city":"Bergen"},"type-class":"Order"}`
	o1004 = `{"purchaseOrderNo":1004,"customerId":2003,"description":"Small","contact":"Walk In","email":"d@x.org","totalPrice":10.25,"items":[{"itemId":3,"price":7,"quantity":4}]}`
)

// mdRow is one behaviour: the query, its bind values and its answer as
// REST writes it; "ERROR" (or "ERROR:text") when the query must fail.
type mdRow struct {
	section, q string
	params     []any
	want       string
}

// sel is "SELECT o.purchaseOrderNo FROM /orders o WHERE <where> ORDER BY
// o.purchaseOrderNo": most rows test a predicate by the orders it keeps.
func sel(where string) string {
	return "SELECT o.purchaseOrderNo FROM /orders o WHERE " + where + " ORDER BY o.purchaseOrderNo"
}

var mdRows = []mdRow{
	// §0 How REST values look.
	{"0 integer division truncates", "SELECT o.purchaseOrderNo / 8 FROM /orders o WHERE o.purchaseOrderNo = 1002", nil, `[125]`},
	{"0 double division", "SELECT o.totalPrice / 8 FROM /orders o WHERE o.purchaseOrderNo = 1001", nil, `[516.375]`},
	{"0 arrays: size", "SELECT o.items.size FROM /orders o WHERE o.purchaseOrderNo = 1001", nil, `[2]`},
	{"0 arrays: isEmpty", "SELECT o.items.isEmpty FROM /orders o WHERE o.purchaseOrderNo = 1002", nil, `[true]`},
	{"0 arrays: [i]", "SELECT o.items[1].itemId FROM /orders o WHERE o.purchaseOrderNo = 1001", nil, `[2]`},
	{"0 nested objects", sel("o.address.city = 'Oslo'"), nil, `[1001]`},
	{"0 keys are strings: number never matches", "SELECT * FROM /orders.keySet k WHERE k = 1001", nil, `[]`},
	{"0 keys are strings", "SELECT * FROM /orders.keySet k WHERE k = '1001'", nil, `["1001"]`},
	{"0 string method with parentheses", sel("o.contact.length() > 6"), nil, `[1001,1004,1005]`},
	{"0 string method as attribute (recommended: same)", sel("o.contact.length > 6"), nil, `[1001,1004,1005]`},

	// §1 Lexical rules.
	{"1 keywords case-insensitive", "select o.purchaseOrderNo FROM /orders o Where o.customerId = 2002 order by o.purchaseOrderNo", nil, `[1002]`},
	{"1 identifiers case-sensitive", sel("o.TotalPrice > 0"), nil, `[]`},
	{"1 region paths case-sensitive", "SELECT * FROM /Orders", nil, "ERROR:/Orders"},
	{"1 string literal with a doubled quote", "SELECT DISTINCT 'it''s' FROM /orders", nil, `["it's"]`},
	{"1 string literal with a newline", "SELECT DISTINCT 'a\nb' FROM /orders", nil, `["a\nb"]`},
	{"1 char literal", "SELECT DISTINCT CHAR 'a' FROM /orders", nil, `["a"]`},
	{"1 long literal", sel("o.purchaseOrderNo = 1001L"), nil, `[1001]`},
	{"1 float literal", sel("o.totalPrice = 5.0f"), nil, `[1005]`},
	{"1 double with exponent", sel("o.totalPrice > 4e3"), nil, `[1001]`},
	{"1 boolean literal", sel("o.flag = TRUE"), nil, `[1005]`},
	{"1 NIL is null", sel("o.contact = NIL"), nil, `[1003]`},
	{"1 UNDEFINED literal", sel("o.email = UNDEFINED"), nil, `[1003,1005]`},
	{"1 date literals compare", "SELECT DISTINCT DATE '2024-01-31' < DATE '2024-02-01' FROM /orders", nil, `[true]`},
	{"1 date never equals a string", "SELECT DISTINCT DATE '2024-01-31' = '2024-01-31' FROM /orders", nil, `[false]`},
	{"1 timestamp literal", "SELECT DISTINCT TIMESTAMP '2024-01-31 10:00:00.5' > DATE '2024-01-31' FROM /orders", nil, `[true]`},
	{"1 time literal", "SELECT DISTINCT TIME '10:00:00' < TIME '10:00:01' FROM /orders", nil, `[true]`},
	{"1 comments", "SELECT o.purchaseOrderNo FROM /orders o -- a comment\nWHERE /* block */ o.purchaseOrderNo = 1001", nil, `[1001]`},
	{"1 reserved word as a name is an error", "SELECT c.type FROM /orders c", nil, "ERROR:reserved"},
	{"1 quoted identifier", sel(`IS_UNDEFINED(o."type") AND o.purchaseOrderNo = 1001`), nil, `[1001]`},
	{"1 arrow", sel("o->customerId = 2002"), nil, `[1002]`},
	{"1 bind parameter", sel("o.customerId = $1"), []any{int64(2002)}, `[1002]`},
	{"1 TRACE prefix", "<TRACE> " + sel("o.customerId = 2002"), nil, `[1002]`},
	{"1 HINT prefix, unknown index ignored", "<HINT 'nope', 'i2'> " + sel("o.customerId = 2002"), nil, `[1002]`},
	{"1 IMPORT and statement separator", "IMPORT com.example.Order; " + sel("o.purchaseOrderNo = 1001") + ";", nil, `[1001]`},
	{"1 hex and octal integers", sel("o.purchaseOrderNo = 0x3E9 OR o.purchaseOrderNo = 01752"), nil, `[1001,1002]`},

	// §2 Grammar.
	{"2 bare expression that is no collection", "/orders.size", nil, "ERROR:not a collection"},
	{"2 ELEMENT as the whole query", "ELEMENT(SELECT o.purchaseOrderNo FROM /orders o WHERE o.purchaseOrderNo = 1001)", nil, "ERROR:not a collection"},
	{"2 bare collection", "/orders.keySet", nil, `["1001","1002","1003","1004","1005"]`},
	{"2 iterator /r o", "SELECT COUNT(*) FROM /orders o", nil, `[5]`},
	{"2 iterator /r AS o", "SELECT COUNT(*) FROM /orders AS o WHERE o.totalPrice > 0", nil, `[5]`},
	{"2 iterator o IN /r", "SELECT COUNT(*) FROM o IN /orders WHERE o.totalPrice > 0", nil, `[5]`},
	{"2 iterator with a TYPE hint", "SELECT COUNT(*) FROM /orders o TYPE Object WHERE o.totalPrice > 0", nil, `[5]`},
	{"2 projection AS", "SELECT o.purchaseOrderNo AS id FROM /orders o WHERE o.purchaseOrderNo = 1001", nil, `[{"id":1001}]`},
	{"2 projection name: expr", "SELECT id: o.purchaseOrderNo FROM /orders o WHERE o.purchaseOrderNo = 1001", nil, `[{"id":1001}]`},
	{"2 NOT binds tighter than comparisons", sel("NOT o.totalPrice > 5"), nil, "ERROR:NOT"},
	{"2 value list needs SET", sel("o.customerId IN (2001, 2002)"), nil, "ERROR:SET"},
	{"2 LIST rejected", sel("o.customerId IN LIST(2001)"), nil, "ERROR"},
	{"2 BAG rejected", sel("o.customerId IN BAG(2001)"), nil, "ERROR"},
	{"2 ARRAY rejected", sel("o.customerId IN ARRAY(2001)"), nil, "ERROR"},
	{"2 STRUCT rejected", "SELECT STRUCT(a: 1) FROM /orders", nil, "ERROR"},
	{"2 || rejected", sel("o.contact || 'x' = 'a'"), nil, "ERROR"},
	{"2 ABS rejected", sel("ABS(o.totalPrice) > 1"), nil, "ERROR"},
	{"2 UNION rejected", "SELECT * FROM /orders UNION SELECT * FROM /orders", nil, "ERROR"},
	{"2 FOR ALL rejected", sel("FOR ALL i IN o.items: i.price > 1"), nil, "ERROR"},
	{"2 EXISTS rejected", sel("EXISTS(o.items)"), nil, "ERROR"},
	{"2 FIRST rejected", sel("FIRST(o.items) = 1"), nil, "ERROR"},
	{"2 FLATTEN rejected", "SELECT FLATTEN(o.items) FROM /orders o", nil, "ERROR"},
	{"2 LISTTOSET rejected", "SELECT LISTTOSET(o.items) FROM /orders o", nil, "ERROR"},
	{"2 ANY comparison rejected", sel("o.totalPrice > ANY(SELECT x.totalPrice FROM /orders x)"), nil, "ERROR"},
	{"2 DEFINE rejected", "DEFINE q AS SELECT * FROM /orders", nil, "ERROR"},
	{"2 BETWEEN does not exist", sel("o.totalPrice BETWEEN 1 AND 100"), nil, "ERROR"},
	{"2 IS NULL does not exist", sel("o.contact IS NULL"), nil, "ERROR"},
	{"2 HAVING is not supported", "SELECT o.customerId, COUNT(*) FROM /orders o GROUP BY o.customerId HAVING COUNT(*) > 1", nil, "ERROR:HAVING"},

	// §3 FROM, names, paths.
	{"3 values explicitly", "SELECT v.purchaseOrderNo FROM /orders.values v WHERE v.customerId = 2002", nil, `[1002]`},
	{"3 keySet", "SELECT k FROM /orders.keySet k WHERE k > '1003' ORDER BY k", nil, `["1004","1005"]`},
	{"3 keys", "SELECT COUNT(*) FROM /orders.keys k WHERE k <> 'x'", nil, `[5]`},
	{"3 entrySet", "SELECT e.key FROM /orders.entrySet e WHERE e.value.totalPrice > 4000", nil, `["1001"]`},
	{"3 entries", "SELECT e.value.purchaseOrderNo FROM /orders.entries e WHERE e.key = '1002'", nil, `[1002]`},
	{"3 key lookup", sel("o.customerId = /orders['1002'].customerId"), nil, `[1002]`},
	{"3 key lookup of an absent key is null", "SELECT DISTINCT /orders['nope'] FROM /orders", nil, `[null]`},
	{"3 region size", "SELECT DISTINCT /orders.size FROM /orders", nil, `[5]`},
	{"3 region name and fullPath", "SELECT DISTINCT /orders.name, /orders.fullPath FROM /orders", nil, `[{"name":"orders","fullPath":"/orders"}]`},
	{"3 join with a member collection: null, missing and empty lists give nothing",
		"SELECT o.purchaseOrderNo, i.itemId FROM /orders o, o.items i ORDER BY o.purchaseOrderNo, i.itemId", nil,
		`[{"purchaseOrderNo":1001,"itemId":1},{"purchaseOrderNo":1001,"itemId":2},{"purchaseOrderNo":1004,"itemId":3},{"purchaseOrderNo":1005,"itemId":1}]`},
	{"3 a scalar iterates as one element", "SELECT t FROM /orders o, o.customerId t WHERE o.purchaseOrderNo = 1001", nil, `[2001]`},
	{"3 cross-region join",
		"SELECT o.purchaseOrderNo AS id, c.name FROM /orders o, /customers c WHERE c.customerId = o.customerId ORDER BY id", nil,
		`[{"id":1001,"name":"Ann"},{"id":1002,"name":"Bob"},{"id":1003,"name":"Ann"},{"id":1004,"name":"Cy"},{"id":1005,"name":"Cy"}]`},
	{"3 implicit attribute", "SELECT * FROM /orders WHERE totalPrice > 4000", nil, `[` + o1001 + `]`},
	{"3 unknown leading name is an attribute: no rows, no error", sel("x.totalPrice > 0"), nil, `[]`},
	{"3 region without slash", "SELECT * FROM orders", nil, "ERROR:cannot be resolved"},
	{"3 unknown region", "SELECT * FROM /nope", nil, "ERROR:/nope"},
	{"3 ambiguous unqualified name", "SELECT * FROM /orders o, /customers c WHERE totalPrice > 0", nil, "ERROR:cannot be resolved"},
	{"3 attribute of null is UNDEFINED", sel("IS_UNDEFINED(o.contact.length)"), nil, `[1003]`},
	{"3 list index out of range fails the query", sel("o.items[5].itemId = 1"), nil, "ERROR:out of range"},
	{"3 map index", "SELECT o.address['city'] FROM /orders o WHERE o.purchaseOrderNo = 1001", nil, `["Oslo"]`},
	{"3 string index is an error", sel("o.contact[0] = 'A'"), nil, "ERROR"},

	// §4 Comparisons, null and UNDEFINED.
	{"4 = null finds explicit nulls only", sel("o.email = null"), nil, `[1002]`},
	{"4 <> 'x' includes null and missing", sel("o.email <> 'x'"), nil, `[1001,1002,1003,1004,1005]`},
	{"4 <> null includes missing, excludes null", sel("o.email <> null"), nil, `[1001,1003,1004,1005]`},
	{"4 relational excludes null and missing", sel("o.contact < 'M'"), nil, `[1001]`},
	{"4 int matches double", sel("o.totalPrice = 5"), nil, `[1005]`},
	{"4 double matches int", sel("o.purchaseOrderNo = 1001.0"), nil, `[1001]`},
	{"4 booleans only with = and <>", sel("o.flag > false"), nil, "ERROR:boolean"},
	{"4 strings are case-sensitive", sel("o.contact = 'ann lee'"), nil, `[1005]`},
	{"4 uppercase sorts before lowercase", sel("o.contact < 'a' AND o.contact > 'A'"), nil, `[1001,1004]`},
	{"4 incompatible types: = is false", sel("o.description = 5"), nil, `[]`},
	{"4 incompatible types: <> is true", sel("o.description <> 5"), nil, `[1001,1002,1003,1004,1005]`},
	{"4 incompatible types: relational is an error", sel("o.description < 5"), nil, "ERROR:compare"},
	{"4 a lone <> of two UNDEFINEDs keeps the row", sel("o.nope <> o.nope2"), nil, `[1001,1002,1003,1004,1005]`},
	{"4 ... but not inside AND", sel("o.nope <> o.nope2 AND true"), nil, `[]`},
	{"4 WHERE must be boolean", sel("o.totalPrice"), nil, "ERROR:boolean"},
	{"4 OR: unknown OR true is true", sel("o.contact < 'M' OR o.purchaseOrderNo = 1003"), nil, `[1001,1003]`},
	{"4 AND/OR precedence", sel("o.customerId = 2003 OR o.customerId = 2001 AND o.totalPrice > 100"), nil, `[1001,1004,1005]`},
	{"4 non-boolean AND operand", sel("o.totalPrice AND true"), nil, "ERROR"},
	{"4 NOT (=) becomes <>, keeping null", sel("NOT (o.contact = 'Ann Lee')"), nil, `[1002,1003,1004,1005]`},
	{"4 NOT (<) becomes >=, dropping null and missing", sel("NOT (o.email < 'b')"), nil, `[1004]`},
	{"4 NOT over AND (De Morgan)", sel("NOT (o.customerId = 2001 AND o.totalPrice > 100)"), nil, `[1002,1003,1004,1005]`},
	{"4 NOT IS_DEFINED", sel("NOT (IS_DEFINED(o.email))"), nil, `[1003,1005]`},
	{"4 NOT of IN negates a boolean", sel("NOT (o.customerId IN SET(2001))"), nil, `[1002,1004,1005]`},
	{"4 NOT of UNDEFINED stays UNDEFINED", sel("NOT o.flag"), nil, `[]`},
	{"4 NOT of a number is an error", sel("NOT (o.totalPrice)"), nil, "ERROR:NOT"},

	// §5 Operators and functions.
	{"5 IN SET with numeric promotion", sel("o.customerId IN SET(2001.0, 2003)"), nil, `[1001,1003,1004,1005]`},
	{"5 IN a member array", sel("'vip' IN o.tags"), nil, `[1001]`},
	{"5 IN a subquery", sel("o.customerId IN (SELECT c.customerId FROM /customers c WHERE c.name = 'Bob')"), nil, `[1002]`},
	{"5 UNDEFINED IN is false, not UNDEFINED", sel("NOT (o.nope IN SET(1))"), nil, `[1001,1002,1003,1004,1005]`},
	{"5 IN a null collection is UNDEFINED", sel("NOT (1 IN o.items)"), nil, `[1001,1002,1004,1005]`},
	{"5 LIKE %", sel("o.contact LIKE 'A%'"), nil, `[1001]`},
	{"5 LIKE _", sel("o.phone LIKE '555-010_'"), nil, `[1001,1002]`},
	{"5 LIKE escaped _", sel("o.description LIKE '%\\_%'"), nil, `[1003]`},
	{"5 LIKE escaped %", sel("o.description LIKE '%50\\%%'"), nil, `[1003]`},
	{"5 LIKE is case-sensitive", sel("o.contact LIKE 'a%'"), nil, `[1005]`},
	{"5 LIKE: * is not a wildcard", sel("o.contact LIKE 'A*'"), nil, `[]`},
	{"5 LIKE % spans newlines", "SELECT DISTINCT 'a\nb' LIKE 'a%b' FROM /orders", nil, `[true]`},
	{"5 NOT LIKE drops null", sel("NOT (o.contact LIKE 'A%')"), nil, `[1002,1004,1005]`},
	{"5 LIKE on a non-string is false", sel("NOT (o.totalPrice LIKE '5%')"), nil, `[1001,1002,1003,1004,1005]`},
	{"5 LIKE matches UNDEFINED as its text", sel("o.email LIKE '%'"), nil, `[1001,1003,1004,1005]`},
	{"5 LIKE with a bind value", sel("o.contact LIKE $1"), []any{"A%"}, `[1001]`},
	{"5 arithmetic *", sel("o.totalPrice * 2 > 8000"), nil, `[1001]`},
	{"5 arithmetic %", sel("o.purchaseOrderNo % 10 = 1"), nil, `[1001]`},
	{"5 arithmetic MOD", sel("o.purchaseOrderNo MOD 2 = 0"), nil, `[1002,1004]`},
	{"5 integer division by zero", sel("o.purchaseOrderNo / 0 = 1"), nil, "ERROR:division by zero"},
	{"5 arithmetic on UNDEFINED fails the query", sel("o.nope + 1 > 0"), nil, "ERROR:arithmetic"},
	{"5 arithmetic over an optional member fails the query", sel("o.email.length() + 1 > 5"), nil, "ERROR:arithmetic"},
	{"5 arithmetic on a string is an error", sel("o.contact + 1 > 0"), nil, "ERROR:arithmetic"},
	{"5 unary minus", sel("-o.totalPrice < -4000"), nil, `[1001]`},
	{"5 IS_DEFINED (null counts as defined)", sel("IS_DEFINED(o.email)"), nil, `[1001,1002,1004]`},
	{"5 IS_UNDEFINED", sel("IS_UNDEFINED(o.email)"), nil, `[1003,1005]`},
	{"5 NVL of null", "SELECT NVL(o.contact, 'n/a') FROM /orders o ORDER BY o.purchaseOrderNo", nil, `["Ann Lee","bob","n/a","Walk In","ann lee"]`},
	{"5 NVL keeps UNDEFINED (written as null)", "SELECT NVL(o.email, 'none') FROM /orders o ORDER BY o.purchaseOrderNo", nil, `["ann@x.org","none",null,"d@x.org",null]`},
	{"5 ELEMENT", sel("o.totalPrice > ELEMENT(SELECT x.totalPrice FROM /orders x WHERE x.purchaseOrderNo = 1002)"), nil, `[1001]`},
	{"5 ELEMENT of several is an error", sel("o.totalPrice > ELEMENT(SELECT x.totalPrice FROM /orders x)"), nil, "ERROR:ELEMENT"},
	{"5 TO_DATE", "SELECT DISTINCT TO_DATE('01/31/2024', 'MM/dd/yyyy') = DATE '2024-01-31' FROM /orders", nil, `[true]`},
	{"5 TO_DATE with a bind value", "SELECT DISTINCT TO_DATE($1, 'MM/dd/yyyy') < DATE '2024-02-01' FROM /orders", []any{"01/31/2024"}, `[true]`},
	{"5 TO_DATE of a member is a syntax error", sel("TO_DATE(o.orderDate, 'MM/dd/yyyy') > DATE '2024-01-01'"), nil, "ERROR:TO_DATE"},
	{"5 startsWith", sel("o.description.startsWith('Rush')"), nil, `[1001,1003]`},
	{"5 toUpperCase", sel("o.contact.toUpperCase() = 'ANN LEE'"), nil, `[1001,1005]`},
	{"5 length", sel("o.contact.length() > 6"), nil, `[1001,1004,1005]`},
	{"5 trim", sel("' x '.trim() = 'x' AND o.purchaseOrderNo = 1001"), nil, `[1001]`},
	{"5 substring", sel("o.description.substring(0, 4) = 'Rush'"), nil, `[1001,1003]`},
	{"5 indexOf", sel("o.contact.indexOf('n') = 1"), nil, `[1001,1005]`},
	{"5 endsWith", sel("o.contact.endsWith('In')"), nil, `[1004]`},
	{"5 equalsIgnoreCase", sel("o.contact.equalsIgnoreCase('ANN LEE')"), nil, `[1001,1005]`},
	{"5 contains", sel("o.contact.contains('al')"), nil, `[1004]`},
	{"5 method on null is UNDEFINED", sel("IS_UNDEFINED(o.contact.toUpperCase())"), nil, `[1003]`},
	{"5 unknown method is UNDEFINED", sel("IS_UNDEFINED(o.contact.frobnicate())"), nil, `[1001,1002,1003,1004,1005]`},
	{"5 UNDEFINED argument gives UNDEFINED", sel("IS_UNDEFINED(o.contact.startsWith(o.nope))"), nil, `[1001,1002,1003,1004,1005]`},
	{"5 method on a JSON object is an error", sel("o.address.toString() = 'x'"), nil, "ERROR:JSON object"},
	{"5 list size()", sel("o.items.size() = 1"), nil, `[1004,1005]`},
	{"5 list isEmpty", sel("o.items.isEmpty"), nil, `[1002]`},
	{"5 list get(i)", sel("o.items.size > 0 AND o.items.get(0).itemId = 3"), nil, `[1004]`},
	{"5 type cast is only a hint", sel("(int) o.totalPrice > 100"), nil, `[1001,1002]`},

	// §6 Result shapes.
	{"6 SELECT * gives the stored objects", "SELECT * FROM /orders o WHERE o.purchaseOrderNo IN SET(1002, 1004) ORDER BY o.purchaseOrderNo", nil, `[` + o1002 + `,` + o1004 + `]`},
	{"6 one projection: plain values", "SELECT o.purchaseOrderNo FROM /orders o WHERE o.customerId = 2001 ORDER BY o.purchaseOrderNo", nil, `[1001,1003]`},
	{"6 one aliased projection: structs", "SELECT o.purchaseOrderNo AS id FROM /orders o WHERE o.customerId = 2001 ORDER BY id", nil, `[{"id":1001},{"id":1003}]`},
	{"6 several projections: structs", "SELECT o.purchaseOrderNo, o.totalPrice FROM /orders o WHERE o.purchaseOrderNo = 1002", nil, `[{"purchaseOrderNo":1002,"totalPrice":250.5}]`},
	{"6 SELECT * over a join: iterator-named structs", "SELECT * FROM /orders o, o.items i WHERE o.purchaseOrderNo = 1004", nil, `[{"o":` + o1004 + `,"i":{"itemId":3,"price":7,"quantity":4}}]`},
	{"6 COUNT(*)", "SELECT COUNT(*) FROM /orders", nil, `[5]`},
	{"6 COUNT(*) AS n is still a plain number", "SELECT COUNT(*) AS n FROM /orders o WHERE o.totalPrice > 0", nil, `[5]`},
	{"6 one aggregate: a scalar", "SELECT MAX(o.purchaseOrderNo) FROM /orders o", nil, `[1005]`},
	{"6 aggregates with aliases: a struct", "SELECT MIN(o.purchaseOrderNo) AS lo, MAX(o.purchaseOrderNo) AS hi FROM /orders o", nil, `[{"lo":1001,"hi":1005}]`},
	{"6 keySet: strings", "SELECT * FROM /orders.keySet k WHERE k < '1003' ORDER BY k", nil, `["1001","1002"]`},
	{"6 entrySet fields", "SELECT e.key, e.value.totalPrice FROM /orders.entrySet e WHERE e.key = '1002'", nil, `[{"key":"1002","totalPrice":250.5}]`},
	{"6 default field names", "SELECT o.items.size, o.contact.toUpperCase(), 'lit', o.totalPrice * 2 FROM /orders o WHERE o.purchaseOrderNo = 1002", nil,
		`[{"size":0,"toUpperCase":"BOB","lit":"lit","field$4":501.0}]`},
	{"6 an iterator projected by name", "SELECT o, o.purchaseOrderNo FROM /orders o WHERE o.purchaseOrderNo = 1004", nil, `[{"o":` + o1004 + `,"purchaseOrderNo":1004}]`},
	{"6 aggregate field names", "SELECT SUM(o.totalPrice), COUNT(*) FROM /orders o", nil, `[{"totalPrice":4495.75,"0":5}]`},
	{"6 bag semantics without DISTINCT", "SELECT o.purchaseOrderNo FROM /orders o, o.items i ORDER BY o.purchaseOrderNo", nil, `[1001,1001,1004,1005]`},
	{"6 DISTINCT", "SELECT DISTINCT o.purchaseOrderNo FROM /orders o, o.items i ORDER BY o.purchaseOrderNo", nil, `[1001,1004,1005]`},
	{"6 DISTINCT compares objects by content", "SELECT DISTINCT i FROM /orders o, o.items i WHERE i.itemId = 1", nil, `[{"itemId":1,"price":10.5,"quantity":2},{"itemId":1,"price":10.5,"quantity":1}]`},
	{"6 DISTINCT structs", "SELECT DISTINCT o.customerId, i.itemId FROM /orders o, o.items i WHERE i.itemId = 1 OR o.customerId = 2003 ORDER BY o.customerId, i.itemId", nil,
		`[{"customerId":2001,"itemId":1},{"customerId":2003,"itemId":1},{"customerId":2003,"itemId":3}]`},
	{"6 a nested object without @type", "SELECT o.address FROM /orders o WHERE o.purchaseOrderNo = 1001", nil, `[{"city":"Oslo"}]`},

	// §7 ORDER BY, LIMIT.
	{"7 null, then UNDEFINED, then values", "SELECT o.purchaseOrderNo FROM /orders o ORDER BY o.email, o.purchaseOrderNo", nil, `[1002,1003,1005,1001,1004]`},
	{"7 DESC reverses all of it", "SELECT o.purchaseOrderNo FROM /orders o ORDER BY o.email DESC, o.purchaseOrderNo", nil, `[1004,1001,1003,1005,1002]`},
	{"7 numbers sort numerically across kinds, by an unprojected key", "SELECT o.purchaseOrderNo FROM /orders o ORDER BY o.totalPrice", nil, `[1005,1004,1003,1002,1001]`},
	{"7 strings sort case-sensitively", "SELECT o.contact FROM /orders o WHERE o.contact <> null ORDER BY o.contact", nil, `["Ann Lee","Walk In","ann lee","bob"]`},
	{"7 several keys ASC/DESC", "SELECT o.purchaseOrderNo FROM /orders o ORDER BY o.customerId DESC, o.purchaseOrderNo ASC", nil, `[1004,1005,1002,1001,1003]`},
	{"7 ORDER BY an alias", "SELECT o.purchaseOrderNo AS id FROM /orders o ORDER BY id DESC LIMIT 2", nil, `[{"id":1005},{"id":1004}]`},
	{"7 LIMIT n", "SELECT o.purchaseOrderNo FROM /orders o ORDER BY o.purchaseOrderNo LIMIT 2", nil, `[1001,1002]`},
	{"7 LIMIT $k", "SELECT o.purchaseOrderNo FROM /orders o ORDER BY o.purchaseOrderNo DESC LIMIT $1", []any{int64(1)}, `[1005]`},
	{"7 LIMIT $k must be an int", "SELECT o.purchaseOrderNo FROM /orders o LIMIT $1", []any{"2"}, "ERROR:LIMIT"},
	{"7 LIMIT 0", "SELECT * FROM /orders LIMIT 0", nil, `[]`},
	{"7 COUNT(*) WHERE LIMIT counts at most n", "SELECT COUNT(*) FROM /orders o WHERE o.totalPrice > 0 LIMIT 2", nil, `[2]`},
	{"7 COUNT(*) without WHERE ignores LIMIT", "SELECT COUNT(*) FROM /orders LIMIT 2", nil, `[5]`},

	// §8 Aggregates and GROUP BY.
	{"8 COUNT(e) skips null and UNDEFINED", "SELECT COUNT(o.email) FROM /orders o", nil, `[2]`},
	{"8 COUNT(DISTINCT e)", "SELECT COUNT(DISTINCT o.customerId) FROM /orders o", nil, `[3]`},
	{"8 SUM of doubles: a float", "SELECT SUM(o.totalPrice) FROM /orders o", nil, `[4495.75]`},
	{"8 SUM of ints: an int", "SELECT SUM(o.purchaseOrderNo) FROM /orders o", nil, `[5015]`},
	{"8 AVG: a float", "SELECT AVG(o.totalPrice) FROM /orders o", nil, `[899.15]`},
	{"8 AVG(DISTINCT e) whole: an int", "SELECT AVG(DISTINCT o.customerId) FROM /orders o", nil, `[2002]`},
	{"8 SUM(DISTINCT e)", "SELECT SUM(DISTINCT o.customerId) FROM /orders o", nil, `[6006]`},
	{"8 MIN and MAX of strings, case-sensitive", "SELECT MIN(o.contact) AS lo, MAX(o.contact) AS hi FROM /orders o", nil, `[{"lo":"Ann Lee","hi":"bob"}]`},
	{"8 MAX of 'Walk In' and 'ann lee'", "SELECT MAX(o.contact) FROM /orders o WHERE o.purchaseOrderNo IN SET(1004, 1005)", nil, `["ann lee"]`},
	{"8 MIN and MAX compare numbers numerically", "SELECT MIN(o.totalPrice) AS lo, MAX(o.totalPrice) AS hi FROM /orders o", nil, `[{"lo":5,"hi":4131.0}]`},
	{"8 MAX across byte/short/int sizes", "SELECT MAX(t) FROM /orders o, SET(127, 128, 32767, 32768) t", nil, `[32768]`},
	{"8 aggregates only in the projection", sel("COUNT(*) > 1"), nil, "ERROR:aggregate"},
	{"8 COUNT(*) over no rows", "SELECT COUNT(*) FROM /orders o WHERE o.totalPrice > 100000", nil, `[0]`},
	{"8 COUNT(*) of an empty region", "SELECT COUNT(*) FROM /empty", nil, `[0]`},
	{"8 other aggregates over no rows give no row", "SELECT SUM(o.totalPrice) FROM /orders o WHERE o.totalPrice > 100000", nil, `[]`},
	{"8 COUNT(e) over no rows gives no row", "SELECT COUNT(o.email) FROM /orders o WHERE o.totalPrice > 100000", nil, `[]`},
	{"8 GROUP BY", "SELECT o.customerId AS cid, COUNT(*) AS n FROM /orders o GROUP BY o.customerId ORDER BY cid", nil,
		`[{"cid":2001,"n":2},{"cid":2002,"n":1},{"cid":2003,"n":2}]`},
	{"8 GROUP BY two columns", "SELECT o.customerId, i.itemId, COUNT(*) AS n FROM /orders o, o.items i GROUP BY o.customerId, i.itemId ORDER BY o.customerId, i.itemId", nil,
		`[{"customerId":2001,"itemId":1,"n":1},{"customerId":2001,"itemId":2,"n":1},{"customerId":2003,"itemId":1,"n":1},{"customerId":2003,"itemId":3,"n":1}]`},
	{"8 GROUP BY an alias, top by total", "SELECT o.customerId AS cid, SUM(o.totalPrice) AS s FROM /orders o GROUP BY cid ORDER BY s DESC LIMIT 1", nil, `[{"cid":2001,"s":4230}]`},
	{"8 GROUP BY without aggregates", "SELECT o.customerId FROM /orders o GROUP BY o.customerId", nil, `[2001,2002,2003]`},
	{"8 projection not grouped", "SELECT o.customerId, o.contact, COUNT(*) FROM /orders o GROUP BY o.customerId", nil, "ERROR:GROUP BY"},
	{"8 GROUP BY not projected", "SELECT COUNT(*) FROM /orders o GROUP BY o.customerId", nil, "ERROR:GROUP BY"},
	{"8 ungrouped projection beside an aggregate", "SELECT o.customerId, COUNT(*) FROM /orders o", nil, "ERROR:aggregate"},

	// §9 Bind values and result conversion.
	{"9 IN SET of bind values", sel("o.customerId IN SET($1, $2)"), []any{int64(2002), int64(2003)}, `[1002,1004,1005]`},
	{"9 a bind of the wrong kind just compares", sel("o.customerId = $1"), []any{"2001"}, `[]`},
	{"9 a long bind", sel("o.purchaseOrderNo = $1"), []any{int64(1005)}, `[1005]`},
	{"9 a boolean bind", sel("o.flag = $1"), []any{true}, `[1005]`},
	{"9 a double bind", sel("o.totalPrice = $1"), []any{250.5}, `[1002]`},
	{"9 too few bind values fail when reached", sel("o.customerId = $2"), []any{int64(1)}, "ERROR:$2"},
	{"9 UNDEFINED in a result is null", "SELECT o.email FROM /orders o ORDER BY o.purchaseOrderNo", nil, `["ann@x.org",null,null,"d@x.org",null]`},
	{"9 dates are written MM/dd/yyyy", "SELECT DISTINCT DATE '2024-01-31' FROM /orders", nil, `["01/31/2024"]`},
}

func TestOQLSpecRows(t *testing.T) {
	ctx := context.Background()
	parts := shards(mdData, "/orders", 3)
	for _, row := range mdRows {
		t.Run(row.section, func(t *testing.T) {
			wantErr := strings.HasPrefix(row.want, "ERROR")
			q, err := Parse(row.q)
			var got string
			if err == nil {
				var res *Result
				if res, err = q.Execute(ctx, mdData, row.params, Options{}); err == nil {
					b, _ := res.MarshalJSON()
					got = string(b)
				}
			}
			checkRow(t, "whole", row, wantErr, got, err)

			// As a partitioned region runs it.
			if err != nil || q == nil || q.ScatterRegion() != "/orders" {
				return
			}
			var partials []*Partial
			for _, shard := range parts {
				p, err := q.ExecutePartial(ctx, mdData, shard, row.params, Options{})
				if err != nil {
					t.Fatalf("partial: %v", err)
				}
				back, err := DecodePartial(EncodePartial(p))
				if err != nil {
					t.Fatalf("decode partial: %v", err)
				}
				partials = append(partials, back)
			}
			res, err := q.Merge(ctx, partials, row.params, Options{})
			got = ""
			if err == nil {
				b, _ := res.MarshalJSON()
				got = string(b)
			}
			checkRow(t, "partitioned", row, wantErr, got, err)
		})
	}
}

func checkRow(t *testing.T, how string, row mdRow, wantErr bool, got string, err error) {
	t.Helper()
	if wantErr {
		if err == nil {
			t.Errorf("%s: %s = %s, want an error", how, row.q, got)
			return
		}
		var se *SyntaxError
		var ee *EvalError
		if !errors.As(err, &se) && !errors.As(err, &ee) && !errors.Is(err, ErrRegionNotFound) && !errors.Is(err, ErrBind) {
			t.Errorf("%s: %s: error %T %v is not a query error", how, row.q, err, err)
		}
		if _, text, ok := strings.Cut(row.want, ":"); ok && !strings.Contains(err.Error(), text) {
			t.Errorf("%s: %s: error %q, want it to mention %q", how, row.q, err, text)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %s: %v, want %s", how, row.q, err, row.want)
		return
	}
	want := row.want
	if !strings.Contains(strings.ToUpper(row.q), "ORDER BY") && !strings.Contains(strings.ToUpper(row.q), "GROUP BY") {
		got, want = sortJSONArray(t, []byte(got)), sortJSONArray(t, []byte(want))
	}
	if got != want {
		t.Errorf("%s: %s\n got  %s\n want %s", how, row.q, got, want)
	}
}
