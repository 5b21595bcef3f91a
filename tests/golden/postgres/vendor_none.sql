CREATE TABLE "Purchasing"."Vendor" (
    "VendorID" integer NOT NULL,
    "AccountNumber" varchar(15) NOT NULL,
    "Name" varchar(50) NOT NULL,
    "CreditRating" smallint NOT NULL,
    "PreferredVendorStatus" boolean NOT NULL,
    "ActiveFlag" boolean NOT NULL,
    "PurchasingWebServiceURL" varchar(1024),
    "ModifiedDate" timestamp(3) NOT NULL,
    CONSTRAINT "Vendor_pkey" PRIMARY KEY ("VendorID")
);
-- I: NONE;
-- U: NONE;
-- D: NONE;
