#!/usr/bin/perl
# The answer cache in memory (query_cache_size): an LRU bounded in bytes
# while many distinct names and since values are asked for; answers for
# names with no entries (a negative cache) are reused, and a Bind of such
# a name drops its cached "no entries" answer once merged.  Issue 40:
#   - answers are kept by what they depend on, the since value too: one
#     asked with ?since= does not push out the name's other answer
#   - distinct absent names share one signed range answer per range of
#     the maps (docs/protocol.md, "Range answers"): 60 of them cost a few
#     answers built, not 60
#   - answers of absent names take a quarter of the bytes at most: a flood
#     of them does not push out the answers of names that exist

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKTimeline;
use SKMirror;

plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x $SKTimeline::TL && -x $SKMirror::MR;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my %sk = map { $_ => ed25519_key($d, $_) } qw(a late);
my %crt = map { $_ => issue($d, $ca, $sk{$_}, "$_.example", "$d/$_") }
    keys %sk;

my (%t, %keys, @tl);
for my $tid (1, 2) {
    mkdir "$d/tl$tid";
    $t{$tid} = start_timeline("$d/tl$tid", tid => $tid,
        operator_key => "$d/operator.pub", chunk_interval => 1);
    ok($t{$tid}{up}, "timeline $tid listens") or BAIL_OUT(slurp($t{$tid}{log}));
    is(append($t{$tid}, root_entry(cert => "$ca.crt", key => $op))->{code},
        201, "timeline $tid trusts the CA");
    is(append($t{$tid}, bind_entry(name => 'a.example', key => $sk{a},
        chain => [$crt{a}]))->{code}, 201, "timeline $tid: Bind a.example");
    $keys{$tid} = ["$d/tl$tid/timeline.pub", "sk-timeline-$tid"];
    push @tl, [$tid, $t{$tid}{url}, $keys{$tid}[0]];
}

# About 2 kB a.example's answer (two timelines, a Bind each), 1.7 kB an
# absent name's: 32 kB holds about fifteen, its quarter (absent names')
# four.  Answers are kept an hour (query_cache): what is checked here is
# what the bytes hold, not ages, on a machine slow enough to take a minute.
my $limit = 32000;
my $m = start_mirror("$d/m", \@tl, query_cache_size => $limit,
    query_cache => 3600);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 20),
    'both timelines Idle');

sub cache { return (mirror_status($m) // {})->{cache} // {} }

my $r = query($m, 'a.example');
is($r->{code}, 200, 'a.example answered');
ok(check_answer($r->{body}, $m->{pub}, \%keys, 'a.example')->{ok},
    '... validly');
is(query($m, 'a.example')->{body}, $r->{body}, '... and then from the cache');
is(cache()->{hits}, 1, 'one hit');

# A query with a nonce (issue 38): the cached answer as it is, then its
# trailer, the nonce signed with the answer's digest by the mirror's key
# (checked here with openssl, docs/protocol.md "Nonces").
my $nonce = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8';
my $nq = http('GET', "$m->{url}/query/a.example?nonce=$nonce");
is($nq->{code}, 200, 'a query with a nonce: answered');
is(cache()->{hits}, 2, '... from the cache');
is(nonce_answer($nq->{body}, $nonce, $m->{pub}), $r->{body},
    '... the answer unchanged, then the trailer, alone in its batch, '
    . 'signed by the mirror over the nonce and the answer\'s digest');
for my $bad ('short', $nonce . 'A', substr($nonce, 0, 42) . '=',
    substr($nonce, 0, 42) . 'B')
{
    $nq = http('GET', "$m->{url}/query/a.example?nonce=$bad");
    is($nq->{code}, 400, "nonce \"$bad\": 400");
    like($nq->{body}, qr/^query: nonce ".*" is not 43 base64url characters \(32 bytes\)$/,
        '... saying why');
}

# Negative cache: a name with no entries, asked twice.
my $n1 = query($m, 'late.example');
is($n1->{code}, 200, 'late.example (no entries) answered');
my $a1 = check_answer($n1->{body}, $m->{pub}, \%keys, 'late.example');
ok($a1->{ok}, '... validly');
is(scalar(map { @{$_->{entries}} } values %{$a1->{timelines}}), 0,
    '... with no entries');
is(query($m, 'late.example')->{body}, $n1->{body},
    'asked again: the same answer');
is(cache()->{absent_hits}, 1, '... counted as a hit for an absent name');

# A Bind of it on both timelines drops the negative answer once merged.
my %late;
for my $tid (1, 2) {
    my $r = append($t{$tid}, bind_entry(name => 'late.example',
        key => $sk{late}, chain => [$crt{late}]));
    is($r->{code}, 201, "timeline $tid: Bind late.example");
    ($late{$tid}) = $r->{body} =~ /^SN: (\d+)$/m;
}
ok(wait_until(sub {
    my $s = mirror_status($m) or return 0;
    2 == grep { $_->{checkpoint_size} > $late{$_->{tid}} }
        @{$s->{timelines}};
}, 20), 'the mirror merged both Binds');
my $n2 = query($m, 'late.example');
my $a2 = check_answer($n2->{body}, $m->{pub}, \%keys, 'late.example');
ok($a2->{ok}, 'late.example answered again, validly');
is(scalar(map { @{$_->{entries}} } values %{$a2->{timelines}}), 2,
    '... with both Binds, not the cached "no entries"');

# Many distinct absent names: a range answer each range of the maps,
# signed once and shared (two names in the maps: a handful of ranges).
# Each distinct answer is checked once (openssl is slow), and then each
# name against the range of the answer it got.
my $c0 = cache();
my ($ok, %valid) = (1);
for my $i (1 .. 60) {
    my $q = query($m, "absent$i.example");
    my ($range) = $q->{body} =~ m{^Name: (\*/\S+)$}m;
    $ok &&= $q->{code} == 200 && ($valid{$q->{body}} //= check_answer(
        $q->{body}, $m->{pub}, \%keys, "absent$i.example")->{ok})
        && defined $range && SKMirror::in_range($range, "absent$i.example");
}
ok($ok, '60 distinct absent names answered, validly, by ' . keys(%valid)
    . ' range answers');
my $c = cache();
my $built = $c->{misses} - $c0->{misses};
ok($built <= 8, "... $built of them built and signed, the rest shared");
my $range = query($m, 'absent7.example')->{body};
like($range, qr{^Name: \*/\d+/[0-9a-f-]+$}m, '... a range answer');
# With a nonce: the range answer as cached, the nonce signed with its
# digest.
my $misses = cache()->{misses};
$nq = http('GET', "$m->{url}/query/absent7.example?nonce=$nonce");
is(nonce_answer($nq->{body}, $nonce, $m->{pub}), $range,
    'a range answer with a nonce: unchanged, then its trailer');
is(cache()->{misses}, $misses, '... from the cache');

# Answers by since: one asked with since does not replace another.
query($m, 'a.example');
query($m, 'a.example', 5);
my $hits = cache()->{hits};
query($m, 'a.example');
query($m, 'a.example', 5);
is(cache()->{hits}, $hits + 2, 'a.example with and without since: both '
    . 'still cached');

# Absent names' answers (60 since values of one absent range) take a
# quarter of the bytes at most: a.example's stays.
query($m, 'absent1.example', $_) for 1 .. 60;
$hits = cache()->{hits};
query($m, 'a.example');
is(cache()->{hits}, $hits + 1, "absent names' answers did not push out "
    . 'a.example\'s');

# Many distinct answers: the cache stays within its limit and evicts.
for my $i (1 .. 60) {
    $ok &&= query($m, 'a.example', 1000 + $i)->{code} == 200;
}
ok($ok, 'a.example with 60 since values answered');
$c = cache();
ok($c->{bytes} <= $limit, "cache holds $c->{bytes} bytes, within $limit");
ok($c->{bytes} > $limit / 2, '... and is used');
is($c->{limit}, $limit, '... the configured limit');
ok($c->{answers} < 20, "$c->{answers} answers held");
ok($c->{evictions} >= 60 - 20, "$c->{evictions} answers evicted");
# The newest is still there; the oldest was evicted (built again: a miss).
my $miss = $c->{misses};
query($m, 'a.example', 1060);
is(cache()->{misses}, $miss, 'the newest: still cached');
query($m, 'a.example', 1001);
is(cache()->{misses}, $miss + 1, 'the oldest: evicted, built again');

# query_cache_size 0: nothing kept.
kill 'TERM', $m->{pid};
waitpid($m->{pid}, 0);
$m->{conf}{query_cache_size} = 0;
restart_mirror($m);
ok(wait_until(sub { 2 == grep { tl_state($m, $_) eq 'Idle' } 1, 2 }, 20),
    'restarted with query_cache_size 0');
query($m, 'a.example') for 1 .. 3;
is(cache()->{hits}, 0, 'no hits');
is(cache()->{answers}, 0, 'nothing held');

kill 'TERM', $m->{pid}, map { $_->{pid} } values %t;
done_testing();
