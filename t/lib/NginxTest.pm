package NginxTest;

# NginxTest -- a private nginx with ngx_sk_module for the t/nginx-*.t tests,
# on top of SKTest (tmpdir, free_port, run_daemon, ...).
#
#   nginx_skip()              a reason to skip (nginx or nginx-dev missing),
#                             or undef; dies if nginx-dev is there but the
#                             module was not built
#   my $t = NginxTest->new;   a prefix dir (readable by the worker user)
#   $t->dir, $t->port(NAME)   the prefix; a free port per NAME
#   $t->write_conf(HTTP)      nginx.conf: load_module, pid, logs, temp paths
#                             inside the prefix, then http { HTTP }
#   $t->test_conf             run "nginx -t": { rc, out, err (+ its log) }
#   $t->start, $t->stop       master in the foreground under run_daemon;
#                             start waits for every port() to accept
#   $t->reload                HUP, then wait for the new workers
#   $t->log                   the error log so far
#   $t->alerts                its [alert]/[crit]/[emerg] lines and any
#                             sanitizer report nginx printed
#   make_ca(DIR), make_cert(DIR, NAME, rsa|ec, [SANS])
#                             an openssl CA and leaf certificates
#   served_chain(PORT, [servername => N, tls => '1.2'|'1.3', sigalgs => S])
#                             the PEM certificates s_client -showcerts saw
#   make_sk(DIR, NAME)        sk keygen: DIR/NAME.key, DIR/NAME.key.pub
#   make_carrier(DIR, SKKEY, CERT, OUT, [ARGS])   sk carrier
#   expired_carrier(SKKEY, CERT, NAME, OUT, [SERVICES])   a carrier that
#                             expired yesterday (`sk carrier` makes none)
#
# Private keys are 0600 and read by the master only; everything else is
# readable by the workers (nobody when run as root).

use strict;
use warnings;

use Exporter 'import';
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

use SKTest;

our @EXPORT = qw(nginx_skip make_ca make_cert served_chain pem_certs
    cert_subject make_sk make_carrier expired_carrier carrier_set
    carrier_set_conf);

our $NGINX = '/usr/sbin/nginx';
our $MODULE = $ENV{NGX_SK_MODULE}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/ngx/ngx_http_sk_module.so';

my @instances;

sub nginx_skip {
    return 'nginx is not installed' unless -x $NGINX;
    return 'nginx-dev is not installed' unless -f '/usr/share/nginx/src/conf_flags';
    die "$MODULE: missing: run make first\n" unless -f $MODULE;
    return undef;
}

sub new {
    my ($class, %opt) = @_;
    my $dir = tmpdir();

    chmod 0755, $dir or die "chmod $dir: $!";
    mkdir "$dir/html" or die "mkdir: $!";
    spew("$dir/html/index.html", "hello\n");
    my $self = bless { dir => $dir, ports => {}, pid => undef, %opt }, $class;
    push @instances, $self;
    return $self;
}

# The start of every nginx test: skip the file where nginx or the module
# is missing, else a new instance, its directory and its first port.
sub setup {
    my ($class) = @_;
    my $skip = nginx_skip();
    Test::More::plan(skip_all => $skip) if $skip;
    my $t = $class->new;
    return ($t, $t->dir, $t->port);
}

sub dir { $_[0]{dir} }

sub port {
    my ($self, $name) = @_;
    return $self->{ports}{$name //= 'default'} //= free_port();
}

sub write_conf {
    my ($self, $http, %opt) = @_;
    my $d = $self->{dir};
    my $workers = $opt{workers} // 1;
    my $extra = $opt{main} // '';

    # The ASan build of the module needs the runtime loaded first.
    spew("$d/nginx.conf", <<"EOF");
load_module $MODULE;
daemon off;
master_process on;
worker_processes $workers;
pid $d/nginx.pid;
error_log $d/error.log notice;
$extra
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $d/client_body;
    proxy_temp_path $d/proxy;
    fastcgi_temp_path $d/fastcgi;
    uwsgi_temp_path $d/uwsgi;
    scgi_temp_path $d/scgi;
    root $d/html;
    # nginx 1.22's default lacks TLSv1.3
    ssl_protocols TLSv1.2 TLSv1.3;
$http
}
EOF
}

sub _env {
    my @env;

    # An ASan-built module (make SAN=1) loads into the plain nginx binary
    # only with the sanitizer runtime preloaded.
    if (($ENV{SAN} // '') eq '1') {
        my $asan = `gcc -print-file-name=libasan.so`;
        chomp $asan;
        push @env, "LD_PRELOAD=$asan",
            'ASAN_OPTIONS=detect_leaks=0:abort_on_error=1';
    }
    return @env;
}

# err gets nginx's stderr and the log it wrote.
sub test_conf {
    my ($self) = @_;
    my $d = $self->{dir};
    unlink "$d/error-t.log";
    my $r = run_cmd(['env', _env(), $NGINX, '-t', '-q', '-p', $d, '-c',
        "$d/nginx.conf", '-e', "$d/error-t.log"]);
    $r->{err} .= slurp("$d/error-t.log") if -f "$d/error-t.log";
    return $r;
}

sub start {
    my ($self) = @_;
    my $d = $self->{dir};

    $self->{pid} = run_daemon(['env', _env(), $NGINX, '-p', $d, '-c',
        "$d/nginx.conf", '-e', "$d/error.log"], "$d/stderr.log");
    for my $p (values %{$self->{ports}}) {
        next if wait_for_port($p, 10);
        die "nginx did not start:\n" . $self->log;
    }
    return $self;
}

sub master_pid {
    my ($self) = @_;
    my $pidf = "$self->{dir}/nginx.pid";
    return -f $pidf ? (slurp($pidf) =~ /(\d+)/)[0] : undef;
}

sub worker_pids {
    my ($self) = @_;
    my $m = $self->master_pid or return ();
    my @w;
    for my $st (glob '/proc/[0-9]*/stat') {
        my $s = eval { slurp($st) } // next;
        my ($pid, $ppid) = $s =~ /^(\d+) \(.*\) \S (\d+)/ or next;
        push @w, $pid if $ppid == $m;
    }
    return @w;
}

sub reload {
    my ($self) = @_;
    my $count = () = $self->log =~ /start worker process/g;
    my @old = $self->worker_pids;

    kill 'HUP', $self->master_pid;
    my $ok = wait_until(sub {
        my $n = () = $self->log =~ /start worker process/g;
        return 1 if $n > $count;
        return $self->log =~ /\[emerg\].*\n[^\n]*\z/ ? 1 : 0;
    }, 15);
    # The old workers stop accepting at once; give them a moment to close
    # their listeners.
    wait_until(sub { !grep { -e "/proc/$_" && slurp("/proc/$_/stat") !~ /\) Z/ } @old }, 5);
    return $ok;
}

sub log {
    my ($self) = @_;
    my $f = "$self->{dir}/error.log";
    return -f $f ? slurp($f) : '';
}

# Alert lines of the error log and sanitizer reports on nginx's stderr.
sub alerts {
    my ($self) = @_;
    my $f = "$self->{dir}/stderr.log";
    my $text = $self->log . (-f $f ? slurp($f) : '');
    return join '', grep { /\[(alert|crit|emerg)\]|Sanitizer|runtime error/ }
        split /^/, $text;
}

sub stop {
    my ($self) = @_;
    return unless $self->{pid};
    my $m = $self->master_pid;
    kill 'QUIT', $m if $m;
    my $st = stop_daemon($self->{pid}, 10);
    $self->{pid} = undef;
    return $st;
}

END {
    local $?;
    $_->stop for @instances;
}

sub run_ok {
    my ($cmd, $what) = @_;
    my $r = run_cmd($cmd);
    die "$what: @$cmd: $r->{err}" if $r->{rc};
    return $r;
}

sub make_ca {
    my ($dir) = @_;
    run_ok(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
        'ec_paramgen_curve:P-256', '-nodes', '-keyout', "$dir/ca.key",
        '-out', "$dir/ca.pem", '-days', '30', '-subj', '/CN=SK Test CA'],
        'make_ca');
    return "$dir/ca.pem";
}

# NAME.pem (leaf, then the CA: a full chain) and NAME.keyfile; rsa or ec.
sub make_cert {
    my ($dir, $name, $type, $sans) = @_;
    my $base = "$dir/$name-$type";
    my @kopt = $type eq 'rsa' ? ('rsa:2048')
        : ('ec', '-pkeyopt', 'ec_paramgen_curve:P-256');
    $sans //= [$name];

    run_ok(['openssl', 'req', '-newkey', @kopt, '-nodes', '-keyout',
        "$base.keyfile", '-out', "$base.csr", '-subj', "/CN=$name"],
        'make_cert req');
    spew("$base.ext", "subjectAltName=" . join(',', map { "DNS:$_" } @$sans)
        . "\nbasicConstraints=CA:FALSE\n");
    run_ok(['openssl', 'x509', '-req', '-in', "$base.csr", '-CA', "$dir/ca.pem",
        '-CAkey', "$dir/ca.key", '-CAcreateserial', '-days', '30',
        '-extfile', "$base.ext", '-out', "$base.leaf"], 'make_cert sign');
    spew("$base.pem", slurp("$base.leaf") . slurp("$dir/ca.pem"));
    chmod 0600, "$base.keyfile";
    return ("$base.pem", "$base.keyfile");
}

sub pem_certs {
    my ($text) = @_;
    return [$text =~ /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n?)/sg];
}

sub cert_subject {
    my ($pem) = @_;
    my $dir = tmpdir();
    spew("$dir/c.pem", $pem);
    my $r = run_cmd(['openssl', 'x509', '-in', "$dir/c.pem", '-noout',
        '-subject', '-issuer']);
    return $r->{out};
}

# Full handshakes only: a resumed session carries no certificates.
sub served_chain {
    my ($port, %opt) = @_;
    my @cmd = ('openssl', 's_client', '-connect', "127.0.0.1:$port",
        '-showcerts', '-no_ticket');
    push @cmd, '-servername', $opt{servername} if $opt{servername};
    push @cmd, $opt{tls} eq '1.2' ? '-tls1_2' : '-tls1_3' if $opt{tls};
    push @cmd, '-sigalgs', $opt{sigalgs} if $opt{sigalgs};
    push @cmd, '-cipher', $opt{cipher} if $opt{cipher};
    my $r = run_cmd(['sh', '-c', join(' ', map { "'$_'" } @cmd) . ' </dev/null']);
    return pem_certs($r->{out});
}

sub make_sk {
    my ($dir, $name) = @_;
    my $r = sk('keygen', '-n', $name, '-o', "$dir/$name.key",
        '--no-backups-i-accept-the-risk');
    die "sk keygen: $r->{err}" if $r->{rc};
    return ("$dir/$name.key", "$dir/$name.key.pub");
}

sub make_carrier {
    my ($skkey, $cert, $name, $out, @args) = @_;
    my $r = sk('carrier', '-k', $skkey, '-c', $cert, '-n', $name,
        '-o', $out, @args);
    die "sk carrier: $r->{err}" if $r->{rc};
    chmod 0644, $out;
    return $out;
}

# A carrier whose validity ended yesterday: `sk carrier` makes only
# current ones, so make it with libsk's own sk_carrier_create.
sub expired_carrier {
    my ($skkey, $cert, $name, $out, $services) = @_;
    my $w = tmpdir();
    my $build = $ENV{BUILD} // 'build';
    $build = "$SKTest::ROOT/$build" unless $build =~ m{^/};
    spew("$w/exp.c", <<'EOF');
#include <stdio.h>
#include <time.h>
#include <openssl/pem.h>
#include <sk/sk.h>
int
main(int argc, char **argv)
{
    sk_err_t            err;
    sk_key_t           *sk, *op;
    sk_carrier_t       *c;
    sk_carrier_params_t p;
    char               *pem;
    size_t              len;
    FILE               *f;
    X509               *x;
    time_t              now = time(NULL);

    if (argc != 6 || sk_key_load_private(&sk, argv[1], &err) != 0) {
        return 1;
    }
    f = fopen(argv[2], "r");
    x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (x == NULL || sk_key_from_pkey(&op, X509_get0_pubkey(x), &err) != 0) {
        return 1;
    }
    p.name = argv[3];
    p.services = argv[5];
    p.not_before = now - 10 * 86400;
    p.not_after = now - 86400;
    if (sk_carrier_create(&c, sk, op, &p, &err) != 0
        || sk_carrier_to_pem(&pem, &len, c, &err) != 0)
    {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    f = fopen(argv[4], "w");
    return f == NULL || fwrite(pem, 1, len, f) != len || fclose(f) != 0;
}
EOF
    my @san = ($ENV{SAN} // '') eq '1' ? ('-fsanitize=address,undefined') : ();
    my $cc = run_cmd(['cc', @san, '-I', "$SKTest::ROOT/common/include", '-o', "$w/exp",
        "$w/exp.c", "$build/libsk.a", '-lhiredis', '-lsodium', '-lssl', '-lcrypto']);
    die "cc: $cc->{err}" if $cc->{rc};
    # a one-shot helper: what it does not free is no finding
    my $r = run_cmd(['env', 'ASAN_OPTIONS=detect_leaks=0', "$w/exp", $skkey, $cert,
        $name, $out, $services // 'https']);
    die "expired carrier: $r->{err}" if $r->{rc};
    chmod 0644, $out;
    return $out;
}

# What the carrier-cache tests serve for a.test, made in $dir: a CA, an
# EC and an RSA certificate, an SK and its carriers c1.pem (EC), c2.pem
# (EC, valid 30 days) and c-rsa.pem.  Returns {ec, ec_key, rsa, rsa_key,
# sk, pub, c1, c2, crsa}: files, and for c1, c2, crsa the carriers' PEM.
sub carrier_set {
    my ($dir) = @_;
    my %s;
    make_ca($dir);
    @s{qw(ec ec_key)} = make_cert($dir, 'a.test', 'ec');
    @s{qw(rsa rsa_key)} = make_cert($dir, 'a.test', 'rsa');
    @s{qw(sk pub)} = make_sk($dir, 'a.test');
    make_carrier($s{sk}, $s{ec}, 'a.test', "$dir/c1.pem");
    make_carrier($s{sk}, $s{ec}, 'a.test', "$dir/c2.pem", '-d', 30);
    make_carrier($s{sk}, $s{rsa}, 'a.test', "$dir/c-rsa.pem");
    @s{qw(c1 c2 crsa)} = map { pem_certs(SKTest::slurp("$dir/$_.pem"))->[0] }
        qw(c1 c2 c-rsa);
    return \%s;
}

# nginx.conf for $t serving carrier_set $s as a.test (both certificates)
# with the carriers taken from the cache $spec.
sub carrier_set_conf {
    my ($t, $s, $spec) = @_;
    my $port = $t->port;
    $t->write_conf(<<"EOF");
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test;
        ssl_certificate $s->{ec}; ssl_certificate_key $s->{ec_key};
        ssl_certificate $s->{rsa}; ssl_certificate_key $s->{rsa_key};
        sovereign_key_public $s->{pub};
        sovereign_key_cache $spec;
        location / { }
    }
EOF
}

1;
