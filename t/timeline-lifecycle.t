#!/usr/bin/perl
# sk-timeline: roots, Bind, Change-Services, Unbind, Rebind, rate limits,
# bad input, checkpoint and proofs, a torn tail and a corrupt log, and a
# clock set back.  Entries are built with the openssl CLI, not libsk.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use MIME::Base64 qw(decode_base64);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $evil = make_ca($d, 'evilca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(example heir other stranger);
my %crt = (
    example => issue($d, $ca, $sk{example}, 'example.com', "$d/example"),
    heir    => issue($d, $ca, $sk{heir}, 'heir.com', "$d/heir"),
    other   => issue($d, $evil, $sk{other}, 'other.com', "$d/other"),
    wrong   => issue($d, $ca, $sk{other}, 'elsewhere.com', "$d/wrong"),
    stranger => issue($d, $ca, $sk{stranger}, 'example.com', "$d/stranger"),
    heirkey => issue($d, $ca, $sk{other}, 'heir.com', "$d/heirkey"),
);
spew("$d/clock", time() . "\n");

my $t = start_timeline($d, operator_key => "$d/operator.pub",
    sk_budget => 2, sk_refill => 1000000, clock_file => "$d/clock",
    clock_wait_ms => 200, max_body => 20000);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
is((stat("$d/timeline.key"))[2] & 0777, 0600, 'timeline key is 0600');

my $r;
sub expect {
    my ($entry, $code, $re, $name) = @_;
    $r = append($t, $entry);
    is($r->{code}, $code, "$name: $code")
        and ($re ? like($r->{body}, $re, "$name: says why") : pass($name))
        or diag($r->{body});
}

# Roots come from the operator only.
expect(root_entry(cert => "$ca.crt", key => $sk{other}), 403,
    qr/^operator: Operator-Signature/, 'root-CA not by the operator');
expect(root_entry(cert => "$ca.crt", key => $op), 201, qr/^SN: 0$/m,
    'Add-Root-CA by the operator');

expect(bind_entry(name => 'example.com', key => $sk{example},
    chain => [$crt{example}], rebinders => 'heir.com'), 201, qr/^SN: 2$/m,
    'Bind with a chain from a trusted root');
expect(bind_entry(name => 'example.com', key => $sk{example},
    chain => [$crt{example}]), 403,
    qr/^bind: example.com already has a Bind/, 'second Bind for a name');
expect(bind_entry(name => 'other.com', key => $sk{other},
    chain => [$crt{other}]), 403,
    qr/^bind: chain: not valid to a trusted root/, 'chain from an untrusted CA');
expect(bind_entry(name => 'other.com', key => $sk{other},
    chain => [$crt{wrong}]), 403,
    qr/^bind: name: end-entity certificate is not for other.com/,
    'certificate for another name');
expect(bind_entry(name => 'heir.com', key => $sk{heir},
    chain => [$crt{heirkey}]), 403, qr/^bind: key: end-entity/,
    'certificate for another key');
expect(bind_entry(name => 'heir.com', key => $sk{heir},
    chain => [$crt{heir}], signer => $sk{other}), 403,
    qr/^bind: SK-Signature/, 'bad SK-Signature');
expect(bind_entry(name => 'heir.com', key => $sk{heir},
    chain => [$crt{heir}]), 201, qr/^Name: heir.com$/m, 'Bind the rebinder');

expect(cs_entry(name => 'example.com', services => 'https,smtps',
    key => $sk{other}), 403, qr/^change-services: SK-Signature/,
    'Change-Services not by the SK');
expect(cs_entry(name => 'nobody.com', services => 'https', key => $sk{other}),
    403, qr/^change-services: nobody.com is not bound/,
    'Change-Services for an unbound name');
expect(cs_entry(name => 'example.com', services => 'https,smtps',
    key => $sk{example}), 201, undef, 'Change-Services');

# Rebind needs an Unbind first, then a listed, bound rebinder.
my $rebind = rebind_entry(name => 'example.com', key => $sk{stranger},
    chain => [$crt{stranger}], rebinder => 'heir.com',
    rebinder_key => $sk{heir});
expect($rebind, 403, qr/^rebind: newest entry for example.com is not an Unbind/,
    'Rebind before an Unbind');
expect(unbind_entry(name => 'example.com', key => $sk{example}), 201, undef,
    'Unbind');
expect(unbind_entry(name => 'example.com', key => $sk{example}), 403,
    qr/^unbind: example.com is not bound/, 'Unbind twice');
expect(rebind_entry(name => 'example.com', key => $sk{stranger},
    chain => [$crt{stranger}], rebinder => 'other.com',
    rebinder_key => $sk{other}), 403,
    qr/^rebind: other.com is not among the rebinders of example.com/,
    'Rebind by an unlisted rebinder');
expect(rebind_entry(name => 'example.com', key => $sk{stranger},
    chain => [$crt{stranger}], rebinder => 'heir.com',
    rebinder_key => $sk{other}), 403, qr/^rebind: Rebinder-Signature/,
    'Rebind with a forged rebinder signature');
expect($rebind, 201, qr/^Rebinder-Name: heir.com$/m, 'Rebind by the rebinder');

# Budget of 2 updates per SK, then 503.
expect(cs_entry(name => 'heir.com', services => "https:$_", key => $sk{heir}),
    201, undef, "Change-Services $_ within budget") for 1 .. 2;
expect(cs_entry(name => 'heir.com', services => 'https:3', key => $sk{heir}),
    503, qr/^rate limit: change-services: budget of 2/, 'budget spent');

# Bad input: 400/413, nothing stored.  Eight appends, each a batch ended
# by its Map-Root entry.
my $size = 16;
$r = http('GET', "$t->{url}/status");
like($r->{body}, qr/^Tree-Size: $size$/m, "tree size $size");
expect("Bind: 1\nName: caf\xc3\xa9.com\n\n", 400, qr/not printable ascii/,
    'non-ASCII');
expect("Nonsense: 1\n\n", 400, qr/^entry: /, 'unknown entry type');
expect("Bind: 1\nName: x\n", 400, qr/^entry: /, 'truncated entry');
expect('x' x 30000, 413, qr/^body: \d+ bytes declared, more than 20000$/m,
    'oversized body');
$r = http('POST', "$t->{url}/append");
is($r->{code}, 400, 'empty form: 400');
$r = http('GET', "$t->{url}/append");
is($r->{code}, 405, 'GET /append: 405');
$r = http('GET', "$t->{url}/status/abc");
is($r->{code}, 410, "/status/<token>: 410 for a token never issued");
$r = http('GET', "$t->{url}/status");
like($r->{body}, qr/^Tree-Size: $size$/m, 'bad input stored nothing');
like($r->{body}, qr/^Max-SN: 15$/m, 'TFM Max-SN');

# Checkpoint and proofs against a model computed from the log on disk.
my @entries = parse_entries(read_log("$d"));
is(scalar @entries, $size, 'log holds every accepted entry');
my @leaves = map { leaf_hash($_) } @entries;
$r = http('GET', "$t->{url}/checkpoint");
my ($origin, $csize, $croot) = split /\n/, $r->{body};
is($origin, 'sk-timeline-7', 'checkpoint origin');
is($csize, $size, 'checkpoint size');
is(decode_base64($croot), mth(@leaves), 'checkpoint root = root from disk');
like($r->{body}, qr/\n\n\x{e2}\x{80}\x{94} sk-timeline-7 \S+\n\z/,
    'checkpoint signature line');
my $ok = 1;
for my $n (1 .. $size) {
    for my $i (0 .. $n - 1) {
        $r = http('GET', "$t->{url}/proof/inclusion?sn=$i&size=$n");
        my @p = map { decode_base64($_) } split /\n/, $r->{body};
        $ok &&= verify_inclusion($leaves[$i], $i, $n, \@p,
            mth(@leaves[0 .. $n - 1]));
    }
}
ok($ok, 'every inclusion proof verifies against the model');
$r = http('GET', "$t->{url}/proof/inclusion?sn=16&size=16");
is($r->{code}, 400, 'inclusion proof beyond the tree: 400');
$r = http('GET', "$t->{url}/proof/consistency?from=3&to=16");
is($r->{code}, 200, 'consistency proof');
$r = http('GET', "$t->{url}/entry/2");
is($r->{body}, $entries[2], '/entry/2 is the stored entry');
like($entries[$_], qr/\AMap-Root: 1\n/, "SN $_ is a Map-Root entry")
    for grep { $_ % 2 } 0 .. $#entries;

# The clock goes back: 503, and no earlier stamp.
my ($last_ts) = $entries[-1] =~ /^Timestamp: (\d+)$/m;
spew("$d/clock", ($last_ts - 100) . "\n");
expect(cs_entry(name => 'example.com', services => 'imaps',
    key => $sk{stranger}), 503, qr/^clock: \d+ is behind the newest entry/,
    'clock set back');
spew("$d/clock", ($last_ts + 5) . "\n");
expect(cs_entry(name => 'example.com', services => 'imaps',
    key => $sk{stranger}), 201, qr/^Timestamp: @{[$last_ts + 5]}$/m,
    'clock caught up');

# Restart: a torn tail is cut and logged; a corrupt middle refuses.
stop_daemon($t->{pid});
my $log = slurp("$d/entries.log");
my $whole = length $log;
spew("$d/entries.log", $log . substr(bind_entry(name => 'late.com',
    key => $sk{heir}, chain => [$crt{heir}]), 0, 200));
restart_timeline($t);
ok($t->{up}, 'restarts after a torn write');
like(slurp($t->{log}), qr/truncating a torn tail of 200 bytes/,
    'torn tail logged');
is(-s "$d/entries.log", $whole, 'torn tail truncated');
$r = http('GET', "$t->{url}/status");
like($r->{body}, qr/^Tree-Size: 18$/m, "all 18 entries back");
stop_daemon($t->{pid});
(my $bad = $log) =~ s/^SN: 4$/SN: 5/m;
spew("$d/entries.log", $bad);
restart_timeline($t);
ok(!$t->{up}, 'refuses to start on a corrupt log');
like(slurp($t->{log}), qr/entries.log: offset \d+ \(SN 4\): SN 5 where 4 belongs/,
    'corruption named');
stop_daemon($t->{pid});
is(slurp("$d/entries.log"), $bad, 'corrupt log left untouched');

unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');

# Configuration errors name the line.
spew("$d/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d\ntid = 1\nsockett = 1\n");
$r = run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad.conf"]);
is($r->{rc}, 78, 'bad config: EX_CONFIG');
like($r->{err}, qr/bad.conf: line 4: unrecognized parameter "sockett"/,
    'bad config: names the line');
for my $listen ('garbage', '127.0.0.1:99999', 'localhost:8470') {
    spew("$d/bad.conf", "listen = $listen\ndata_dir = $d\ntid = 1\n");
    $r = run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad.conf"]);
    is($r->{rc}, 78, "-n refuses listen = $listen");
    like($r->{err}, qr/listen "\Q$listen\E"/, '... naming it');
}
spew("$d/bad.conf", "listen = [::1]:8470\ndata_dir = $d\ntid = 1\n");
is(run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad.conf"])->{rc}, 0,
    '-n accepts an IPv6 listen address');
for my $ci (0, 3601) {
    spew("$d/bad.conf", "listen = 127.0.0.1:1\ndata_dir = $d\ntid = 1\n"
        . "checkpoint_interval = $ci\n");
    $r = run_cmd([$SKTimeline::TL, '-n', '-c', "$d/bad.conf"]);
    like($r->{err}, qr/"checkpoint_interval" must be within 1\.\.3600/,
        "-n refuses checkpoint_interval = $ci");
}

# A checkpoint at least every checkpoint_interval, entries and readers or
# not (the metric counts signatures); from memory in between, and anew
# as soon as the tree grew.
{
    my $cd = "$d/ci";
    mkdir $cd;
    my $mport = free_port();
    my $c = start_timeline($cd, operator_key => "$d/operator.pub",
        checkpoint_interval => 1, metrics_listen => "127.0.0.1:$mport");
    ok($c->{up}, 'a timeline with checkpoint_interval = 1')
        or diag(slurp($c->{log}));
    my $age = sub {
        my ($m) = SKTimeline::http('GET', "http://127.0.0.1:$mport/metrics")
            ->{body} =~ /^sk_timeline_checkpoint_age_seconds(?:\{[^}]*\})? (\S+)$/m;
        return $m // 'none';
    };
    my $t0 = time;
    my $old = 0;
    ok(wait_until(sub { $old = $age->(); $old ne 'none' && $old < 2
        && time - $t0 >= 4 }, 15),
        "no reader for 4 s: signed all the same ($old s ago)");
    my $note = sub { SKTimeline::http('GET', "$c->{url}/checkpoint")->{body} };
    my $a = $note->();
    my ($ts) = $a =~ /^Timestamp (\d+)$/m;
    ok(defined $ts && time - $ts <= 2, "its Timestamp is fresh ($ts)");
    my ($size) = $a =~ /\A[^\n]*\n(\d+)\n/;
    my $e = SKTimeline::append($c, root_entry(cert => "$ca.crt", key => $op));
    is($e->{code}, 201, 'an entry') or diag($e->{body});
    my ($grown) = $note->() =~ /\A[^\n]*\n(\d+)\n/;
    ok($grown > $size, "the next checkpoint covers it at once ($size, then "
        . "$grown entries)");
    stop_daemon($c->{pid});
}

done_testing();
