#!/usr/bin/perl
# An entry longer than an entry bundle carries (65,535 bytes: each entry
# of /tile/entries/ is a big-endian uint16 length and the text), on a real
# sk-timeline and a real sk-mirror:
#   - a max_body above what any append needs: the timeline refuses to start
#   - with max_body raised, a Bind of more than 65,535 bytes (a certificate
#     with a large comment): 413 naming the limit, nothing stored
#   - a timeline that stored such an entry before the limit: its bundle
#     cannot be served (500), and sk-mirror syncs it through the chunks.
#     No append can make that log now, so the test writes it as such a
#     timeline did: the Bind stamped as the next SN and signed with the
#     timeline's own key (as the daemon signs), added to entries.log of the
#     stopped timeline, which takes it at start like any logged entry
#     (the last one's signature checked).

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
my %sk = map { $_ => ed25519_key($d, $_) } qw(small big);
my $crt = issue($d, $ca, $sk{small}, 'small.example', "$d/small");
my $bigcrt = issue($d, $ca, $sk{big}, 'big.example', "$d/big",
    'nsComment=' . ('x' x 70000) . "\n");
my $big = bind_entry(name => 'big.example', key => $sk{big},
    chain => [$bigcrt]);
cmp_ok(length($big), '>', 65535, 'the Bind is longer than a bundle carries');

# A max_body no append needs (above 2 x 3 x 65535 + 1024): refused.
mkdir "$d/tl";
my $t = start_timeline("$d/tl", tid => 7, operator_key => "$d/operator.pub",
    chunk_interval => 1, max_body => 400000);
ok(!$t->{up}, 'max_body 400000: the timeline refuses to start');
stop_daemon($t->{pid}) if $t->{up};
like(slurp($t->{log}), qr/"max_body": 400000 is more than any append needs (?#
    )\(394234: an entry and its ref of 65535 bytes each/,
    '... naming the limit') or diag(slurp($t->{log}));

# The chain alone is past max_chain_bytes too (24576, its own 413):
# raised, so that the entry's stamped length is what is refused.
$t->{conf}{max_body} = 300000;
$t->{conf}{max_chain_bytes} = 200000;
restart_timeline($t);
ok($t->{up}, 'max_body 300000: listens') or BAIL_OUT(slurp($t->{log}));
is(append($t, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'Add-Root-CA: 201');
is(append($t, bind_entry(name => 'small.example', key => $sk{small},
    chain => [$crt]))->{code}, 201, 'Bind small.example: 201');
my $r = append($t, $big);
is($r->{code}, 413, 'Bind of ' . length($big) . ' bytes: 413')
    or diag($r->{body});
like($r->{body}, qr/^entry: \d+ bytes once stamped, more than 65535 \(the (?#
    )most an entry bundle, \/tile\/entries\/, carries\)$/m,
    '... naming the limit');
$r = http('GET', "$t->{url}/tile/entries/000.p/4");
is($r->{code}, 200, 'the bundle of the four entries (two Map-Roots) serves');
like(http('GET', "$t->{url}/checkpoint")->{body}, qr/\A[^\n]+\n4\n/,
    '... and the checkpoint holds 4: nothing stored');

# The log a timeline without the limit made, on a timeline of its own
# (9): the Bind as SN 4, after two appends and their Map-Root entries;
# the start appends a Map-Root entry after it (SN 5).
mkdir "$d/tl9";
my $t9 = start_timeline("$d/tl9", tid => 9, operator_key => "$d/operator.pub",
    chunk_interval => 1);
ok($t9->{up}, 'timeline 9 listens') or BAIL_OUT(slurp($t9->{log}));
is(append($t9, root_entry(cert => "$ca.crt", key => $op))->{code}, 201,
    'timeline 9: Add-Root-CA');
is(append($t9, bind_entry(name => 'small.example', key => $sk{small},
    chain => [$crt]))->{code}, 201, 'timeline 9: Bind small.example');
stop_daemon($t9->{pid});
open(my $fh, '>>', "$d/tl9/entries.log") or die "entries.log: $!";
print $fh stamp($big, 9, 4, time, "$d/tl9/timeline.key");
close $fh;
restart_timeline($t9);
ok($t9->{up}, 'timeline 9 starts with the long entry in its log')
    or BAIL_OUT(slurp($t9->{log}));
ok(wait_until(sub { http('GET', "$t9->{url}/checkpoint")->{body}
    =~ /\A[^\n]+\n6\n/ }, 10), '... its checkpoint holds 6');
$r = http('GET', "$t9->{url}/tile/entries/000.p/6");
is($r->{code}, 500, '... its bundle cannot be served');
ok(wait_until(sub { http('GET', "$t9->{url}/chunks")->{body} =~ /\b5\b/ },
    10), '... a chunk holds it');

# A mirror of both (it answers only with two).
my %keys = map { $_ => ["$d/tl" . ($_ == 7 ? '' : $_) . '/timeline.pub',
    "sk-timeline-$_"] } 7, 9;
my $m = start_mirror("$d/m", [[7, $t->{url}, @{$keys{7}}],
    [9, $t9->{url}, @{$keys{9}}]]);
ok($m->{up}, 'sk-mirror listens') or BAIL_OUT(slurp($m->{log}));
ok(wait_state($m, 9, 'Idle', 20), 'the mirror syncs timeline 9: Idle')
    or diag(slurp($m->{log}));
ok(wait_state($m, 7, 'Idle', 20), '... and timeline 7');
my ($st) = grep { $_->{tid} == 9 } @{mirror_status($m)->{timelines}};
is($st->{entries}, 6, '... every entry, the long one too');
like(slurp($m->{log}), qr/timeline 9: source chunks: GET \S+\/tile\/entries(?#
    )\/000\.p\/6: HTTP 500/, '... through the chunks, saying why');
$r = query($m, 'big.example');
is($r->{code}, 200, 'query big.example: 200') or diag($r->{body});
my $a = check_answer($r->{body}, $m->{pub}, \%keys, 'big.example');
ok($a->{ok}, '... the answer verifies') or diag($a->{err});
is(join(',', map { $_->{sn} } @{$a->{timelines}{9}{entries}}), '4',
    '... with the long Bind, SN 4 of timeline 9');

done_testing();
