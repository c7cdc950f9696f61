#!/usr/bin/perl
# DNSSEC evidence end to end (docs/protocol.md, "DNSSEC evidence"): zones
# ".", "test." and "example.test." signed here with ldns-signzone, served
# by a real NSD through a real validating Unbound (SKDNS), the chain for
# _sovereign-key.example.test. asked of it by `sk dnssec chain` (the same
# bytes as the chain built from the zone files), put in a Bind by
# `sk entry bind --dnssec-chain`.  A real sk-timeline with
# evidence = ca, dnssec and the private root as anchors accepts it and
# refuses broken chains naming the cause; one with the default evidence =
# ca refuses it; a real sk-mirror with the same anchors syncs and serves
# it, one without anchors waits (Stuck) rather than call the timeline
# reneged, and a forged timeline that stamped a Bind whose record holds
# another SK's hash is held reneged (unbacked-bind) by the mirror's own
# check.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use JSON::PP;
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;
use SKDNS;

my $CHAIN = "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/tests/dnssec_chain';
plan skip_all => 'no ldns-signzone' unless has_cmd('ldns-signzone');
plan skip_all => 'dnssec_chain not built' unless -x $CHAIN;
plan skip_all => 'sk-mirror not built' unless -x $SKMirror::MR;
plan skip_all => 'no nsd or unbound' unless have_dns();

my $d = tmpdir();
my $r = sk('keygen', '-n', 'example.test', '-o', "$d/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'an SK for example.test') or diag($r->{err});
my ($hex) = sk('pubkey', '-p', "$d/sk.key.pub")->{out} =~ /sha256:(\w{64})/;
mkdir "$d/z";
$r = run_cmd(["$SKTest::ROOT/tests/unit/dnssec_zones.sh", "$d/z", $hex]);
is($r->{rc}, 0, 'zones signed') or diag($r->{err});

# A Bind whose DNSSEC-Chain is built from the zones given (dx_build).
sub dnssec_bind {
    my ($what, @zones) = @_;
    my $c = run_cmd([$CHAIN, "$d/z", @zones]);
    is($c->{rc}, 0, "$what: chain built") or diag($c->{err});
    spew("$d/$what.chain", $c->{out});
    my $b = sk('entry', 'bind', '-k', "$d/sk.key", '-n', 'example.test',
        '-s', 'https', '--dnssec-chain', "$d/$what.chain");
    is($b->{rc}, 0, "$what: sk entry bind --dnssec-chain") or diag($b->{err});
    return $b->{out};
}

my $dns = start_dns("$d/dns", "$d/z");
ok($dns->{up}, 'NSD and Unbound serve the private hierarchy')
    or BAIL_OUT(slurp($dns->{log}));
$r = sk('dnssec', 'chain', '-n', 'example.test', '--resolver',
    $dns->{resolver}, '-o', "$d/fetched.chain");
is($r->{rc}, 0, 'sk dnssec chain through the resolver') or diag($r->{err});
# The root's DNSKEY RRset holds two keys, which Unbound hands out in turn
# (rrset-roundrobin): ten fetches, one chain.
my %chains;
for my $i (1 .. 10) {
    my $f = sk('dnssec', 'chain', '-n', 'example.test', '--resolver',
        $dns->{resolver}, '-o', "$d/again.chain");
    $chains{$f->{rc} == 0 ? slurp("$d/again.chain") : "failed: $f->{err}"}++;
}
is(scalar(keys %chains), 1,
    'ten fetches through a resolver that rotates RRsets: the same bytes')
    or diag(scalar(keys %chains) . ' different chains');
ok(exists $chains{slurp("$d/fetched.chain")}, '... the first fetch\'s');
$r = sk('dnssec', 'chain', '-n', 'www.example.test', '--resolver',
    $dns->{resolver}, '-o', "$d/none.chain");
is($r->{rc}, 1, 'no record at _sovereign-key.www.example.test: no chain');
like($r->{err}, qr/TXT _sovereign-key\.www\.example\.test\.: no such RRset/,
    '... naming the RRset');

my %bind = (
    good  => dnssec_bind('good', qw(ex ex test root)),
    new   => dnssec_bind('new', qw(ex ex test root.new)),
    old   => dnssec_bind('old', qw(ex.old ex test root)),
    wrong => dnssec_bind('wrong', qw(ex.wrong ex test root)),
    two   => dnssec_bind('two', qw(ex.two ex test root)),
    nods  => dnssec_bind('nods', qw(ex ex test.nods root)),
    other => dnssec_bind('other', qw(ex ex test other.root)),
    soon  => dnssec_bind('soon', qw(ex.soon ex test root)),
);
ok(slurp("$d/fetched.chain") eq slurp("$d/good.chain"),
    'the chain through the resolver is the one built from the zone files');
like($bind{good}, qr/^DNSSEC-Chain: [\w-]+$/m, 'the Bind carries the chain');
unlike($bind{good}, qr/^CA-Cert-Chain:/m, '... and no CA-Cert-Chain line');

my %t;
mkdir "$d/tl$_" for 7, 8;
$t{7} = start_timeline("$d/tl7", tid => 7, evidence => 'ca, dnssec',
    dnssec_anchors => "$d/z/root.ds");
$t{8} = start_timeline("$d/tl8", tid => 8);
ok($t{$_}{up}, "timeline $_ listens") or BAIL_OUT(slurp($t{$_}{log}))
    for 7, 8;

$r = append($t{8}, $bind{good});
is($r->{code}, 403, 'evidence = ca (the default): a DNSSEC Bind is refused');
like($r->{body}, qr/bind: DNSSEC evidence is not accepted here \(evidence = ca\)/,
    '... naming the setting');

my @refused = (
    [old => qr/RRSIG over TXT _sovereign-key\.example\.test\.: DNSSEC signature has expired/,
        'an expired RRSIG over the record'],
    [wrong => qr/the TXT at _sovereign-key\.example\.test\. holds 0{64}, not the SK's hash/,
        "a record with another SK's hash"],
    [two => qr/2 TXT records at _sovereign-key\.example\.test\., want exactly one/,
        'two records'],
    [nods => qr/broken DS link: no DNSKEY of zone example\.test\. matches its DS RRset/,
        'a DS naming another key'],
    [other => qr/trust anchor mismatch: the root's DNSKEY RRset is signed by no key an anchor names \(keys \d+\); \S+root\.ds gives no validity windows/,
        'a chain from another root'],
    [soon => qr/valid now, not 300 s later \(it must hold until stamped\): dnssec chain: RRSIG over TXT _sovereign-key\.example\.test\.: DNSSEC signature has expired/,
        'an RRSIG expiring before the Bind could be stamped'],
);
for my $c (@refused) {
    my ($what, $want, $desc) = @$c;
    $r = append($t{7}, $bind{$what});
    is($r->{code}, 403, "refused: $desc");
    like($r->{body}, $want, '... naming the cause');
}
$r = append($t{7}, $bind{good});
is($r->{code}, 201, 'evidence = ca, dnssec: the good chain is accepted')
    or diag($r->{body});

# A timeline that lies: it stamped the Bind with another SK's hash.
my $fkey = ed25519_key($d, 'tl9');
mkdir "$d/f9";
forge("$d/f9", key => $fkey, tid => 9,
    entries => [stamp($bind{wrong}, 9, 0, time, $fkey)]);
my $f9 = serve_forged("$d/f9");

my @tl = ((map { [$_, $t{$_}{url}, "$d/tl$_/timeline.pub", "sk-timeline-$_"] }
    7, 8), [9, $f9->{url}, "$d/tl9.pub", 'sk-timeline-9']);
my $m = start_mirror("$d/m", \@tl, dnssec_anchors => "$d/z/root.ds");
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_state($m, 7, 'Idle', 15) && wait_state($m, 8, 'Idle', 15),
    'the mirror checks the DNSSEC Bind again and syncs: Idle')
    or diag(slurp($m->{log}));
ok(wait_state($m, 9, 'Corrupt', 15),
    'a forged timeline that stamped a Bind with a wrong record: Corrupt');
like(http('GET', "$m->{url}/reneged/9")->{body},
    qr/^Reason: SN 0: a Bind for example\.test not validly backed: dnssec chain: the TXT at _sovereign-key\.example\.test\. holds 0{64}, not the SK's hash\nKind: unbacked-bind$/m,
    '... unbacked-bind, by the mirror\'s own DNSSEC check');
my %keys = map { $_->[0] => [$_->[2], $_->[3]] } @tl[0, 1];
$r = query($m, 'example.test');
is($r->{code}, 200, 'query example.test: 200');
my $a = check_answer($r->{body}, $m->{pub}, \%keys, 'example.test');
ok($a->{ok}, '... the answer verifies') or diag($a->{err});
like($a->{timelines}{7}{entries}[0]{text} // '', qr/^DNSSEC-Chain: /m,
    '... with the Bind and its DNSSEC-Chain');

my $n = start_mirror("$d/n", \@tl, dnssec_anchors => "$d/none.ds");
ok($n->{up}, 'a mirror without anchors listens') or BAIL_OUT(slurp($n->{log}));
ok(wait_state($n, 7, 'Stuck', 15), '... it cannot judge the Bind: Stuck')
    or diag(slurp($n->{log}));
isnt(tl_state($n, 7), 'Corrupt', '... not Corrupt');
like(slurp($n->{log}), qr/SN 0: dnssec_anchors: .*none\.ds/,
    '... and says why');

# A root key rollover.  "root" is signed with the old key and publishes
# the new one, "root.new" is signed with the new key.  Forged timelines
# hold Binds stamped when they choose: 10 an old-key Bind of 2023, 11 a
# new-key Bind of 2023 (before that key's window), 12 a new-key Bind of
# now; 7 is the real timeline's old-key Bind of now.
sub ds_of {
    my ($f) = @_;
    my @w = split ' ', slurp($f);
    return @w[3 .. 6];
}
sub key_digest {
    my ($f, $from, $until) = @_;
    my ($tag, $alg, $dt, $hex) = ds_of($f);
    return "<KeyDigest id=\"k$tag\" validFrom=\"$from\""
        . ($until ? " validUntil=\"$until\"" : '') . ">\n"
        . "<KeyTag>$tag</KeyTag>\n<Algorithm>$alg</Algorithm>\n"
        . "<DigestType>$dt</DigestType>\n<Digest>$hex</Digest>\n</KeyDigest>\n";
}
my @tomorrow = gmtime(time + 86400);
my $until = sprintf('%04d-%02d-%02dT00:00:00Z', $tomorrow[5] + 1900,
    $tomorrow[4] + 1, $tomorrow[3]);
spew("$d/z/root-anchors.xml", qq{<?xml version="1.0" encoding="UTF-8"?>\n}
    . qq{<TrustAnchor id="test" source="file:root-anchors.xml">\n}
    . "<Zone>.</Zone>\n"
    . key_digest("$d/z/root.ds", '2020-01-01T00:00:00+00:00', $until)
    . key_digest("$d/z/root-new.ds", '2024-01-01T00:00:00+00:00')
    . "</TrustAnchor>\n");
my $T2023 = 1685577600;
my %f;
for my $c ([10, 'good', $T2023], [11, 'new', $T2023], [12, 'new', time]) {
    my ($tid, $what, $ts) = @$c;
    my $k = ed25519_key($d, "tl$tid");
    mkdir "$d/f$tid";
    forge("$d/f$tid", key => $k, tid => $tid,
        entries => [stamp($bind{$what}, $tid, 0, $ts, $k)]);
    $f{$tid} = serve_forged("$d/f$tid");
}
my %roll = ((map { $_ => [$_, $f{$_}{url}, "$d/tl$_.pub", "sk-timeline-$_"] }
    10 .. 12), 7 => $tl[0]);
my $p = start_mirror("$d/p", [@roll{7, 10, 11, 12}],
    dnssec_anchors => "$d/z/root-anchors.xml");
ok($p->{up}, 'a mirror with root-anchors.xml (both keys, windows) listens')
    or BAIL_OUT(slurp($p->{log}));
ok(wait_state($p, 7, 'Idle', 15) && wait_state($p, 10, 'Idle', 15)
    && wait_state($p, 12, 'Idle', 15),
    '... old-key Binds of 2023 and of now, a new-key Bind of now: Idle')
    or diag(slurp($p->{log}));
ok(wait_state($p, 11, 'Corrupt', 15),
    '... a new-key Bind stamped before the new key\'s window: Corrupt');
like(http('GET', "$p->{url}/reneged/11")->{body},
    qr/^Reason: SN 0: a Bind for example\.test not validly backed: dnssec chain: trust anchor mismatch: the root's DNSKEY RRset is signed by key \d+, an anchor of \S+root-anchors\.xml from 2024-01-01T00:00:00Z until \(open\), not at 2023-06-01T00:00:00Z\n/m,
    '... naming the key, its window and the time');
my $q = start_mirror("$d/q", [@roll{7, 10, 12}],
    dnssec_anchors => "$d/z/root-new.ds");
ok($q->{up}, 'a mirror with only the new key and no windows listens')
    or BAIL_OUT(slurp($q->{log}));
ok(wait_state($q, 12, 'Idle', 15), '... a new-key Bind: Idle')
    or diag(slurp($q->{log}));
ok(wait_state($q, 7, 'Stuck', 15) && wait_state($q, 10, 'Stuck', 15),
    '... old-key Binds, of now and of 2023: Stuck, not judged')
    or diag(slurp($q->{log}));
ok(tl_state($q, 7) ne 'Corrupt' && tl_state($q, 10) ne 'Corrupt',
    '... never Corrupt');
like(slurp($q->{log}), qr/SN 0: dnssec chain: trust anchor mismatch: the root's DNSKEY RRset is signed by no key an anchor names \(keys \d+\); \S+root-new\.ds gives no validity windows, so a key the root used before a rollover cannot be told from a forgery/,
    '... and says why');

# A client judges a DNSSEC Bind reported unbacked with its own anchors
# (the trust file's dnssec_anchors): it checks m's evidence against 9.
my $closed = free_port();
sub verify_log {
    my ($tag, $anchors) = @_;
    my $tr = "$d/trust-$tag";
    spew($tr, join('', map { "timeline = $_->[0] $_->[2]\n" } @tl)
        . "mirror = $m->{url} $m->{pub}\nt1 = 0\nfresh_percent = 50\n"
        . "dnssec_anchors = $anchors\n");
    my $r = sk('verify', '--trust', $tr, '--cache', "$d/cache-$tag",
        '--connect', "127.0.0.1:$closed", '--json', 'https://example.test');
    my $j = eval { decode_json($r->{out}) } // {};
    return join "\n", map { $_->{result} } @{$j->{mirrors} // []};
}
like(verify_log('with', "$d/z/root.ds"),
    qr/timeline 9 reneged \(the client checked the evidence: SN 0: a Bind for example\.test not validly backed: dnssec chain: the TXT at _sovereign-key\.example\.test\. holds 0+\): no longer trusted/,
    'sk verify: the client checks the DNSSEC evidence itself and distrusts 9');
like(verify_log('without', "$d/none.ds"),
    qr/reports timeline 9 as reneged; not checkable by a client, still trusted: evidence \(unbacked-bind\): its DNSSEC-Chain needs the root's trust anchors \(dnssec_anchors\): \Q$d\E\/none\.ds: cannot open: No such file or directory$/m,
    '... without anchors: not checkable, saying it is the anchors it lacks');

stop_daemon($_->{pid}) for $m, $n, $p, $q, $f9, values %f, values %t;
stop_dns($dns);
unlike(slurp($m->{log}) . slurp($t{7}{log}), qr/Sanitizer|runtime error/,
    'no sanitizer reports');
done_testing();
