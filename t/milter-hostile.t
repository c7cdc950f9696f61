#!/usr/bin/perl
# sk-milter against a hostile peer on its milter socket, speaking the
# binary protocol (t/lib/SKMilter.pm): a macro list with a name and no
# value (libmilter's smfi_getsymval read past its array on it and the
# milter died), unterminated strings, lengths that lie, unknown commands,
# commands out of order.  Each closes that connection and nothing else:
# the daemon stays up, makes no invalid memory access (valgrind, or ASan
# under make SAN=1), and still checks the next message from Postfix.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKPostfix qw(make_cert);
use SKMilter qw(macros);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
for (qw(postfix smtp-sink swaks)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}

my $dir = tmpdir();
my $mport = free_port();
spew("$dir/trust", "example.com smtp\n");
spew("$dir/sk-milter.conf", join('', map { "$_\n" }
    "Socket inet:$mport\@127.0.0.1", 'Name mx.example.org',
    "TrustFile $dir/trust", 'Syslog no'));

# An ASan build checks itself; anything else runs under valgrind, which
# also sees reads inside uninstrumented libraries.
my $asan = run_cmd(['ldd', $skm])->{out} =~ /libasan/;
my @under;
if (!$asan) {
    plan(skip_all => 'neither an ASan build nor valgrind')
        unless has_cmd('valgrind');
    @under = ('valgrind', '--error-exitcode=99', '--log-file=' . "$dir/vg.log");
}
my $mpid = run_daemon([@under, $skm, '-f', '-c', "$dir/sk-milter.conf"],
    "$dir/milter.log");
ok(wait_for_port($mport, 60), 'milter listens') or diag(slurp("$dir/milter.log"));

# One hostile connection: negotiate, send the packets, the milter closes.
sub hostile {
    my ($name, @pkts) = @_;
    my $m = SKMilter->connect($mport);
    ok($m, "$name: connected") or return;
    my ($cmd) = $m->negotiate;
    is($cmd // '', 'O', "$name: negotiated");
    for my $p (@pkts) {
        ref $p ? $m->send(@$p) : $p eq 'EOF' ? $m->done : $m->raw($p);
    }
    1 while defined(($m->reply(10))[0]);
    ok($m->closed(10), "$name: the milter closed the connection");
    ok(daemon_alive($mpid), "$name: the milter is alive");
}

my $from = ['M', "<a\@example.com>\0"];
hostile('macro name without a value (the crash)',
    ['D', "M{tls_version}\0"], $from);
hostile('three macro strings', ['D', "M" . macros('{daemon_name}', 'smtpd',
    '{tls_version}')], $from);
hostile('macro value not NUL-terminated',
    ['D', "M{tls_version}\0TLSv1.3"], $from);
hostile('macro for no stage', ['D', "Z{a}\0b\0"], $from);
hostile('header macros with a name and no value', $from,
    ['D', "L{a}\0"]);
hostile('empty macro packet', ['D', ''], $from);
hostile('macro with an empty name', ['D', "M\0x\0"], $from);
hostile('MAIL without NUL', ['M', '<a@example.com>']);
hostile('empty MAIL', ['M', '']);
hostile('header with a name only', $from, ['L', "From\0"]);
hostile('header value not NUL-terminated', $from, ['L', "From\0a\@b.c"]);
hostile('header with three strings', $from, ['L', "From\0a\0b\0"]);
hostile('header before MAIL', ['L', "From\0a\@example.com\0"]);
hostile('end of message before MAIL', ['E', '']);
hostile('second negotiation', ['O', pack('NNN', 6, 0x1ff, 0)]);
hostile('connect with an unknown family', ['C', "host\0X"]);
hostile('connect address not NUL-terminated',
    ['C', "host\0" . '4' . pack('n', 25) . '127.0.0.1']);
hostile('HELO without NUL', ['H', 'client.example']);
hostile('unknown command', ['X', 'junk']);
hostile('empty packet', pack('N', 0));
hostile('length past the limit', pack('N', 0x7fffffff) . 'M');
hostile('length longer than what follows, then EOF',
    pack('N', 100) . "Mshort", 'EOF');

# Before negotiation.
for my $pre (["MAIL first", pack('N', 17) . "M<a\@example.com>\0"],
    ['negotiation too short', pack('N', 5) . "O\0\0\0\6"],
    ['protocol version 1', pack('N', 13) . 'O' . pack('NNN', 1, 0x1ff, 0)])
{
    my $m = SKMilter->connect($mport);
    $m->raw($pre->[1]);
    1 while defined(($m->reply(10))[0]);
    ok($m->closed(10), "$pre->[0]: the milter closed the connection");
}
for my $junk ("\x00\x00\x00\x05Xabcd", "\xff\xff\xff\xffjunk",
    join('', map { chr(int(rand(256))) } 1 .. 4096))
{
    my $m = SKMilter->connect($mport);
    $m->raw($junk);
    ok($m->closed(10), 'garbage: the milter closed the connection');
}
ok(daemon_alive($mpid), 'after every hostile peer: the milter is alive');

# A well-formed session on the same socket still gets its verdict.
my $m = SKMilter->connect($mport);
my ($cmd, $opt) = $m->negotiate;
is($cmd, 'O', 'good peer: negotiated');
$m->send('D', 'M' . macros('{tls_version}', 'TLSv1.3', '{daemon_name}',
    'smtpd'));
$m->send(@$from);
is(($m->reply)[0], 'c', 'good peer: MAIL continues');
$m->send('L', "From\0a\@example.com\0");
is(($m->reply)[0], 'c', 'good peer: header continues');
$m->send('L', "Authentication-Results\0\"mx.example.org\"; sk=pass\0");
is(($m->reply)[0], 'c', 'good peer: forged header continues');
$m->send('D', 'E' . macros('i', 'ABC123'));
$m->send('E', '');
my @got;
while (my ($c, $d) = $m->reply) {
    push @got, [$c, $d];
    last if $c =~ /^[catry]$/;
}
is_deeply([map { $_->[0] } @got], ['m', 'i', 'c'],
    'good peer: forged header removed, ours inserted, continue');
is($got[0][1], pack('N', 1) . "Authentication-Results\0\0",
    'good peer: the first A-R header is the one removed');
like($got[1][1] // '', qr/^\0\0\0\x01Authentication-Results\0mx\.example\.org;\s+sk=pass \(TLSv1\.3 for smtp service\)/,
    'good peer: sk=pass inserted');
$m->send('Q', '');
ok($m->closed, 'good peer: QUIT closes');

# And mail through Postfix.
my ($key, $crt) = make_cert($dir, 'mx.example.org');
spew("$dir/chain.pem", slurp($key) . slurp($crt), 0600);
my $pf = SKPostfix->new(dir => $dir, milter => "inet:127.0.0.1:$mport",
    chain => "$dir/chain.pem", main => { milter_command_timeout => '60s' })
    ->start;
my $r = run_cmd(['swaks', '--server', '127.0.0.1', '--port', $pf->{smtp},
    '--from', 'alice@example.com', '--to', 'bob@dest.example', '--tls',
    '--header', 'Subject: after the hostile peers', '--timeout', '60']);
is($r->{rc}, 0, 'Postfix accepts mail through the milter') or diag($r->{out} . $pf->log);
ok($pf->wait_messages(1, 60), 'delivered') or diag($pf->log);
my ($msg) = $pf->messages;
like($msg // '', qr/^Authentication-Results: mx\.example\.org;\s+sk=pass/m,
    'the message was checked: sk=pass');
$pf->stop;

is(stop_daemon($mpid, 30), 0, 'clean exit (no memory errors)');
if (@under) {
    my $vg = -e "$dir/vg.log" ? slurp("$dir/vg.log") : '';
    like($vg, qr/ERROR SUMMARY: 0 errors/, 'valgrind: no invalid access')
        or diag($vg);
}
like(slurp("$dir/milter.log"), qr/closing the connection from 127\.0\.0\.1 port \d+: macro: a name without a value/,
    'the malformed macro packet is logged');
done_testing();
