#!/usr/bin/perl

# nginx-sni-reload.t -- two servers on one port, each with its own SK:
# each SNI name gets its own carrier.  A reload with a new carrier file
# serves the new carrier to new handshakes, and a small load loop running
# through several reloads, with two workers, loses no request.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Socket::SSL;
use Test::More;
use Time::HiRes qw(sleep);

use SKTest;
use NginxTest;

my ($t, $d, $port) = NginxTest->setup;

make_ca($d);
my ($ea, $ea_key) = make_cert($d, 'a.test', 'ec');
my ($eb, $eb_key) = make_cert($d, 'b.test', 'ec');
my ($ska, $puba) = make_sk($d, 'a.test');
my ($skb, $pubb) = make_sk($d, 'b.test');
make_carrier($ska, $ea, 'a.test', "$d/a.pem");
make_carrier($skb, $eb, 'b.test', "$d/b.pem");
my $a1 = pem_certs(slurp("$d/a.pem"))->[0];
my $b1 = pem_certs(slurp("$d/b.pem"))->[0];

$t->write_conf(<<"EOF", workers => 2);
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test;
        ssl_certificate $ea; ssl_certificate_key $ea_key;
        sovereign_key_public $puba;
        sovereign_key_carrier $d/a.pem;
        location / { }
    }
    server {
        listen 127.0.0.1:$port ssl;
        server_name b.test;
        ssl_certificate $eb; ssl_certificate_key $eb_key;
        sovereign_key_public $pubb;
        sovereign_key_carrier $d/b.pem;
        location / { }
    }
EOF
$t->start;

for my $tls ('1.2', '1.3') {
    is(served_chain($port, servername => 'a.test', tls => $tls)->[2], $a1,
        "SNI a.test, TLS $tls: a's carrier");
    is(served_chain($port, servername => 'b.test', tls => $tls)->[2], $b1,
        "SNI b.test, TLS $tls: b's carrier");
}
my $r = sk('verify-chain', '-p', $pubb, '--connect', "127.0.0.1:$port",
    '--servername', 'b.test');
is($r->{rc}, 0, 'sk verify-chain: b.test with b\'s SK') or diag($r->{err});

# A load loop: a new TLS connection and request after another, through
# the reloads.
my $stop = "$d/stop";
my $pid = fork // die "fork: $!";
if ($pid == 0) {
    my ($ok, $fail) = (0, 0);
    my @err;
    while (!-e $stop) {
        my $s = IO::Socket::SSL->new(PeerAddr => '127.0.0.1', PeerPort => $port,
            SSL_hostname => 'a.test', SSL_verify_mode => SSL_VERIFY_NONE,
            SSL_session_cache_size => 0, Timeout => 5);
        if ($s) {
            print $s "GET / HTTP/1.0\r\nHost: a.test\r\n\r\n";
            local $/;
            my $resp = <$s> // '';
            if ($resp =~ /\r\n\r\nhello\n\z/) { $ok++ } else { $fail++; push @err, 'short reply' }
            close $s;
        } else {
            $fail++;
            push @err, "$!: $SSL_ERROR";
        }
    }
    spew("$d/load", "$ok $fail @err[0 .. ($#err < 4 ? $#err : 4)]\n");
    POSIX::_exit(0);
}

my @carriers = ($a1);
for my $i (1 .. 3) {
    sleep 0.3;
    # a new carrier for the same key, put in place atomically
    make_carrier($ska, $ea, 'a.test', "$d/a.new", '-d', 30 + $i);
    rename "$d/a.new", "$d/a.pem" or die "rename: $!";
    push @carriers, pem_certs(slurp("$d/a.pem"))->[0];
    ok($t->reload, "reload $i");
    is(served_chain($port, servername => 'a.test')->[2], $carriers[-1],
        "after reload $i: the new carrier");
}
isnt($carriers[1], $carriers[0], 'the carriers differ');
sleep 0.3;
spew($stop, '');
waitpid($pid, 0);
my ($ok, $fail, $why) = split ' ', slurp("$d/load"), 3;
cmp_ok($ok, '>', 20, "load loop: $ok requests served through the reloads");
is($fail, 0, 'load loop: none failed') or diag($why);
is(served_chain($port, servername => 'b.test')->[2], $b1,
    'b.test kept its carrier');

$t->stop;
is($t->alerts, '', 'no alerts or sanitizer reports');

done_testing();
