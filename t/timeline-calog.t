#!/usr/bin/perl
# sk-timeline stores each CA certificate of the chains once: Binds through
# one intermediate keep it once in certs.log and refer to it from
# entries.log, while every answer (201, /entry, chunks, the Merkle root)
# is the canonical entry as submitted.  A torn last line of certs.log is
# cut at start; an entry whose certificate is missing from certs.log stops
# the start, naming the offset, SN and reference.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(decode_base64);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl, curl or bunzip2'
    unless has_cmd('openssl') && has_cmd('curl') && has_cmd('bunzip2');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $root = make_ca($d, 'root');
my $inter = make_intermediate($d, $root, 'inter');
my $inter_b64 = der_b64("$inter.crt");

my $t = start_timeline($d, operator_key => "$d/operator.pub",
    chunk_interval => 1);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));
is(append($t, root_entry(cert => "$root.crt", key => $op))->{code}, 201,
    'root added');

my @stamped;
for my $n (qw(a b c)) {
    my $sk = ed25519_key($d, $n);
    my $crt = issue($d, $inter, $sk, "$n.example", "$d/$n");
    my $e = bind_entry(name => "$n.example", key => $sk,
        chain => [$crt, "$inter.crt"]);
    my $r = append($t, $e);
    is($r->{code}, 201, "$n.example bound through the intermediate")
        or diag($r->{body});
    my ($chain) = $e =~ /^CA-Cert-Chain: (.*)$/m;
    like($r->{body}, qr/^CA-Cert-Chain: \Q$chain\E$/m,
        '... the 201 carries the whole chain');
    push @stamped, $r->{body};
}

my $log = slurp("$d/entries.log");
ok(index($log, $inter_b64) < 0, 'entries.log does not repeat the intermediate');
my $ref = '@' . b64url(sha256($inter_b64));
is(scalar(() = $log =~ /,\Q$ref\E$/mg), 3, '... each Bind refers to it');
is(slurp("$d/certs.log"), "$inter_b64\n", 'certs.log holds it once');
cmp_ok((-s "$d/entries.log") + (-s "$d/certs.log"), '<',
    length(read_log($d)) - length($inter_b64),
    'the two files hold less than the canonical entries would');

# Each append is a batch of its own, ended by a Map-Root entry: the Binds
# are SN 2, 4 and 6.
is(http('GET', "$t->{url}/entry/" . 2 * $_)->{body}, $stamped[$_ - 1],
    '/entry/' . 2 * $_ . ' is the canonical entry') for 1 .. 3;

# Published chunks hold the canonical text; the checkpoint's root is over it.
ok(wait_until(sub { http('GET', "$t->{url}/status")->{body}
    =~ /^Max-Published-SN: 7$/m }, 10), 'all eight entries published');
my $all = '';
for my $line (split /\n/, http('GET', "$t->{url}/chunks")->{body}) {
    my ($uri) = split / /, $line;
    my $f = "$d/chunk.bz2";
    run_cmd(['curl', '-s', '-o', $f, "$t->{url}$uri"]);
    $all .= run_cmd(['bunzip2', '-c', $f])->{out} =~ s/\n\n[^\n]*TFM.*\z//sr;
}
my @entries = parse_entries(read_log($d));
like($all, qr/\A\Q$entries[0]\E/, 'chunks start with the canonical log');
ok(index($all, $stamped[2]) > 0, '... and hold the last Bind whole');
my ($size, $croot) = (split /\n/, http('GET', "$t->{url}/checkpoint")->{body})[1, 2];
is($size, 8, 'checkpoint of eight entries (four of them Map-Roots)');
is(decode_base64($croot), mth(map { leaf_hash($_) } @entries),
    '... its root over the canonical entries');

# A restart reads both files back; a torn last line of certs.log is cut.
stop_daemon($t->{pid});
spew("$d/certs.log", slurp("$d/certs.log") . 'MIIBkTCB');
restart_timeline($t);
ok($t->{up}, 'restarts with a torn certs.log') or diag(slurp($t->{log}));
like(slurp($t->{log}), qr/certs\.log: truncating a torn last line of 8 bytes \(line 2\)/,
    '... saying it cut the torn line');
is(slurp("$d/certs.log"), "$inter_b64\n", '... back to its whole line');
is(http('GET', "$t->{url}/entry/4")->{body}, $stamped[1],
    '... and answers as before');
stop_daemon($t->{pid});

# Without the certificate the log cannot be read back: no start.
spew("$d/certs.log", '');
restart_timeline($t);
ok(!$t->{up} && !daemon_alive($t->{pid}), 'refuses to start without it');
like(slurp($t->{log}), qr/entries\.log: offset \d+ \(SN 2\): certificate \Q$ref\E is not in certs\.log/,
    '... naming the entry and the reference');
is(slurp("$d/entries.log"), $log, '... the log untouched');

# A line that is not base64url stops the start too, naming the line.
spew("$d/certs.log", "$inter_b64\nnot base64!\n");
restart_timeline($t);
ok(!$t->{up}, 'refuses a damaged certs.log');
like(slurp($t->{log}), qr/certs\.log: line 2: not a base64url certificate/,
    '... naming the line');

done_testing();
