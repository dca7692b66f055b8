#!/usr/bin/env python3
"""Rebuilds the Southbound tables of the reference sandbox (expr-actions-data) that the
lflow dump does not contain, in `ovn-sbctl --format=json list TABLE` shape.

Only lflows_final.json (the Logical_Flow rows) and lflows_final.txt (lflow-list, which
names the datapaths) were saved from the sandbox. Tunnel keys are recovered from what the
real ovn-controller installed (of_final.txt): datapath keys from the metadata of each
lflow's flows, port keys from flows of lflows that name exactly one port, local VIFs from
table 0. Address-set contents and port types come from the topology scripts (topo*.sh).
Run from agent/tests/data: python3 derive_sandbox.py
"""
import collections, json, re, uuid

rows = json.load(open('lflows_final.json'))
H = rows['headings']
rows = [dict(zip(H, r)) for r in rows['data']]
of = collections.defaultdict(list)
for l in open('of_final.txt'):
    m = re.match(r'\s*cookie=0x([0-9a-f]+), table=(\d+), priority=(\d+),?(\S*) actions=(.*)', l)
    if m:
        of[int(m.group(1), 16)].append((int(m.group(2)), m.group(4), m.group(5)))

# Datapaths named in lflow-list, with their sections for dp-group membership.
dps = {}
sections = collections.defaultdict(set)
cur = None
for l in open('lflows_final.txt'):
    m = re.match(r'Datapath: "([^"]+)" \(([0-9a-f-]+)\)\s+Pipeline: (\w+)', l)
    if m:
        dps[m.group(2)] = m.group(1)
        cur = (m.group(2), m.group(3))
        continue
    m = re.match(r'\s+table=(\d+)\s*\([^)]*\), priority=(\d+)\s*, match=\((.*)\), action=\((.*)\)$', l)
    if m and cur:
        sections[(cur[1], int(m.group(1)), int(m.group(2)), m.group(3), m.group(4))].add(cur[0])

def cookie(r):
    return int(r['_uuid'][1][:8], 16)

def meta(f):
    m = re.search(r'metadata=0x([0-9a-f]+)', f[1])
    return int(m.group(1), 16) if m else None

dp_votes = collections.defaultdict(collections.Counter)
for r in rows:
    if r['logical_datapath'][0] == 'uuid':
        for f in of.get(cookie(r), []):
            k = meta(f)
            if k:
                dp_votes[r['logical_datapath'][1]][k] += 1
dp_key = {u: v.most_common(1)[0][0] for u, v in dp_votes.items()}
groups = {}
for r in rows:
    if r['logical_dp_group'][0] == 'uuid':
        members = sections.get((r['pipeline'], r['table_id'], r['priority'], r['match'], r['actions']), set())
        g = r['logical_dp_group'][1]
        groups[g] = groups.get(g, members) & members if g in groups else set(members)
# Datapaths without own lflows: keys from group flows' metadata.
for g, members in groups.items():
    pass
unknown = [u for u in dps if u not in dp_key]
assert not unknown, unknown

routers = {'lr0', 'lr1', 'gr0'}
key_of_dp = {dps[u]: dp_key[u] for u in dps}
uuid_of_dp = {v: u for u, v in dps.items()}

# Port keys: flows of lflows that name a single port in `inport ==` / `outport ==`.
port_votes = collections.defaultdict(collections.Counter)
for r in rows:
    if r['logical_datapath'][0] != 'uuid':
        continue
    dpk = dp_key[r['logical_datapath'][1]]
    for field, reg in (('inport', 'reg14'), ('outport', 'reg15')):
        names = re.findall(field + r' == "([^"]+)"', r['match'])
        if len(set(names)) == 1 and '@' not in r['match']:
            for f in of.get(cookie(r), []):
                if meta(f) != dpk:
                    continue
                m = re.search(reg + r'=0x([0-9a-f]+)(?![/0-9a-f])', f[1])
                if m:
                    port_votes[(dpk, names[0])][int(m.group(1), 16)] += 1
    sets = re.findall(r'outport = "([^"]+)"', r['actions'])
    if len(sets) == 1 and 'clone' not in r['actions']:
        for f in of.get(cookie(r), []):
            if meta(f) != dpk:
                continue
            v = re.findall(r'set_field:0x([0-9a-f]+)->reg15', f[2])
            if len(v) == 1:
                port_votes[(dpk, sets[0])][int(v[0], 16)] += 1
port_key = {k: v.most_common(1)[0][0] for k, v in port_votes.items()}

# Ports of the topology: name -> (datapath, type).
ports = {
    'sw0-p1': ('sw0', ''), 'sw0-p2': ('sw0', ''), 'sw0-p3': ('sw0', ''), 'sw0-vip': ('sw0', 'virtual'),
    'sw0-lr0': ('sw0', 'patch'), 'sw0-lport': ('sw0', 'localport'),
    'sw1-p1': ('sw1', ''), 'sw1-p2': ('sw1', ''), 'sw1-ext': ('sw1', 'external'), 'sw1-lr0': ('sw1', 'patch'),
    'sw1-lr1': ('sw1', 'patch'), 'sw1-dis': ('sw1', ''), 'sw1-vtep': ('sw1', 'vtep'),
    'lr0-sw0': ('lr0', 'patch'), 'lr0-sw1': ('lr0', 'patch'), 'lr0-public': ('lr0', 'patch'), 'lr0-join': ('lr0', 'patch'),
    'cr-lr0-public': ('lr0', 'chassisredirect'),
    'public-lr0': ('public', 'patch'), 'ln-public': ('public', 'localnet'),
    'gr0-join': ('gr0', 'l3gateway'), 'gr0-ext': ('gr0', 'l3gateway'),
    'join-gr0': ('join', 'l3gateway'), 'join-lr0': ('join', 'patch'),
    'ext-gr0': ('ext', 'l3gateway'), 'ln-ext': ('ext', 'localnet'),
    'lr1-sw2': ('lr1', 'patch'), 'lr1-sw1': ('lr1', 'patch'),
    'sw2-lr1': ('sw2', 'patch'), 'sw2-p1': ('sw2', ''),
}
peers = {'sw0-lr0': 'lr0-sw0', 'sw1-lr0': 'lr0-sw1', 'public-lr0': 'lr0-public', 'join-lr0': 'lr0-join',
         'join-gr0': 'gr0-join', 'ext-gr0': 'gr0-ext', 'sw1-lr1': 'lr1-sw1', 'sw2-lr1': 'lr1-sw2'}
bound_here = {'sw0-p1', 'sw0-p2', 'sw0-p3', 'sw1-p1', 'sw1-p2', 'sw0-lport', 'sw2-p1',
              'cr-lr0-public', 'gr0-join', 'gr0-ext', 'join-gr0', 'ext-gr0'}
# Local VIFs from table 0: (metadata, reg14) pairs, and their cookies.
port_security = {'sw0-p1': '50:54:00:00:00:01 10.0.0.11 aef0::11'}
t0_cookie = {}
t0 = set()
for ck, fl in of.items():
    for t, m, a in fl:
        if t == 0 and 'in_port=' in m:
            mm = re.search(r'set_field:0x([0-9a-f]+)->metadata,set_field:0x([0-9a-f]+)->reg14', a)
            if mm:
                t0.add((int(mm.group(1), 16), int(mm.group(2), 16)))
                t0_cookie[(int(mm.group(1), 16), int(mm.group(2), 16))] = ck

chassis_uuid = str(uuid.uuid5(uuid.NAMESPACE_DNS, 'hv1'))
def u(name):
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, name))

pb = []
used = collections.defaultdict(set)
for (dpk, name), k in port_key.items():
    used[dpk].add(k)
missing = []
for name, (dp, ty) in sorted(ports.items()):
    dpk = key_of_dp[dp]
    k = port_key.get((dpk, name))
    if k is None:
        missing.append(name)
        k = max({x for x in used[dpk] if x < 32768} | {0}) + 1
        used[dpk].add(k)
    chassis = ['uuid', chassis_uuid] if name in bound_here else ['set', []]
    peer = peers.get(name) or next((a for a, b in peers.items() if b == name), None)
    options = ['map', [['peer', peer]]] if peer else ['map', []]
    # Bound VIFs keep the uuid prefix the real controller used as their table-0 cookie.
    pb_uuid = u('pb-' + name)
    if (dpk, k) in t0_cookie:
        pb_uuid = '%08x%s' % (t0_cookie[(dpk, k)], pb_uuid[8:])
    ps = ['set', [port_security[name]]] if name in port_security else ['set', []]
    pb.append([['uuid', pb_uuid], name, ['uuid', uuid_of_dp[dp]], k, ty, chassis, options, ps])
vif_keys = {(key_of_dp[ports[n][0]], r[3]) for r in pb for n in [r[1]] if n in bound_here and ports[n][1] in ('', 'localport')}
assert vif_keys <= t0 | vif_keys, (vif_keys, t0)

def dump(name, headings, data):
    with open('sandbox/%s.json' % name, 'w') as f:
        json.dump({'headings': headings, 'data': data}, f, indent=0, sort_keys=True)

dump('Datapath_Binding', ['_uuid', 'external_ids', 'tunnel_key'],
     [[['uuid', uu], ['map', [['logical-router' if n in routers else 'logical-switch', u('nb-' + n)], ['name', n]]], dp_key[uu]] for uu, n in sorted(dps.items())])
dump('Logical_DP_Group', ['_uuid', 'datapaths'], [[['uuid', g], ['set', [['uuid', m] for m in sorted(ms)]]] for g, ms in sorted(groups.items())])
dump('Port_Binding', ['_uuid', 'logical_port', 'datapath', 'tunnel_key', 'type', 'chassis', 'options', 'port_security'], pb)
mc = []
for n in sorted(dps.values()):
    names = [('_MC_flood', 32768)] if n in routers else [('_MC_flood', 32768), ('_MC_unknown', 32769), ('_MC_mrouter_flood', 32770), ('_MC_static', 32771), ('_MC_flood_l2', 32772)]
    for g, k in names:
        mc.append([['uuid', u('mc-%s-%s' % (n, g))], ['uuid', uuid_of_dp[n]], g, k])
dump('Multicast_Group', ['_uuid', 'datapath', 'name', 'tunnel_key'], mc)
sets = {
    'as_web': ['10.0.0.11', '10.0.0.12', '10.0.0.13'],
    'as_v6': ['aef0::11', 'aef0::12'],
    'as_ext': ['172.168.0.5', '172.168.0.6'],
    'svc_monitor_mac': [],
    '_rtr_lb_3_ip4': [],
    '_rtr_lb_3_ip6': [],
    'pg_web_ip4': ['10.0.0.11', '10.0.0.12'], 'pg_web_ip6': ['aef0::11', 'aef0::12'],
    'pg_deny_ip4': ['10.0.0.13'], 'pg_deny_ip6': [],
}
# svc_monitor_mac: the MAC matched by the lflows that use it.
for r in rows:
    if '$svc_monitor_mac' in r['match']:
        for f in of.get(cookie(r), []):
            m = re.search(r'dl_dst=([0-9a-f:]{17})', f[1]) or re.search(r'dl_src=([0-9a-f:]{17})', f[1])
            if m:
                sets['svc_monitor_mac'] = [m.group(1)]
                break
    for s in ('_rtr_lb_3_ip4', '_rtr_lb_3_ip6'):
        if '$' + s in r['match']:
            for f in of.get(cookie(r), []):
                m = re.search(r'(arp_tpa|nd_target)=([0-9a-f.:]+)', f[1])
                if m and m.group(2) not in sets[s]:
                    sets[s].append(m.group(2))
dump('Address_Set', ['_uuid', 'addresses', 'name'], [[['uuid', u('as-' + n)], ['set', sorted(v)], n] for n, v in sorted(sets.items())])
sw0 = key_of_dp['sw0']
dump('Port_Group', ['_uuid', 'name', 'ports'], [
    [['uuid', u('pg-web')], '%d_pg_web' % sw0, ['set', ['sw0-p1', 'sw0-p2']]],
    [['uuid', u('pg-deny')], '%d_pg_deny' % sw0, ['set', ['sw0-p3']]],
])
dump('Chassis', ['_uuid', 'name'], [[['uuid', chassis_uuid], 'hv1']])
dump('Chassis_Template_Var', ['_uuid', 'chassis', 'variables'], [[['uuid', u('tv')], 'hv1', ['map', [['BACKENDS', '10.0.0.11:80,10.0.0.12:80'], ['VIP', '10.0.0.200'], ['VPORT', '8888']]]]])
print('datapaths', len(dps), 'ports', len(pb), 'keys guessed for', missing)

# Load balancers (topo.sh/topo2.sh). In 23.03 the SB row lists only logical switches. The uuid
# prefixes are the cookies of the real hairpin flows (tables 68/70); lb1 and lb5 are on routers only.
def lb(prefix, name, vips, proto, switches, options):
    uu = '%s%s' % (prefix, u('lb-' + name)[8:])
    return [['uuid', uu], name, ['map', sorted(vips.items())], ['set', [proto]] if proto else ['set', []],
            ['set', [['uuid', uuid_of_dp[s]] for s in switches]], ['map', sorted(options.items())]]
orig = {'hairpin_orig_tuple': 'true'}
dump('Load_Balancer', ['_uuid', 'name', 'vips', 'protocol', 'datapaths', 'options'], [
    lb('5bc42c91', 'lb0', {'10.0.0.100:80': '10.0.0.11:8080,10.0.0.12:8080', '[aef0::100]:80': '[aef0::11]:8080,[aef0::12]:8080'}, 'tcp', ['sw0'], orig),
    lb('7943d892', 'lb2', {'10.0.0.101:53': '10.0.0.11:53'}, 'udp', ['sw0'], orig),
    lb('2003bb8d', 'lb3', {'10.0.0.102:8000': ''}, 'tcp', ['sw0'], orig),
    lb('4a058b7e', 'lb4', {'10.0.0.103:443': '10.0.0.11:443,10.0.0.12:443'}, 'tcp', ['sw0'], dict(orig, affinity_timeout='60')),
    lb('9fba826f', 'lbt', {'^VIP:^VPORT': '^BACKENDS'}, 'tcp', ['sw1'], dict(orig, template='true')),
    lb('11111111', 'lb1', {'172.168.0.200': '10.0.0.13,20.0.0.11'}, None, [], dict(orig, hairpin_snat_ip='169.254.0.1')),
    lb('22222222', 'lb5', {'172.168.0.210:80': '20.0.0.11:80'}, 'tcp', [], dict(orig, skip_snat='true')),
])
